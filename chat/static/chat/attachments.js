/* Attached documents: the scope chip ("Searching: …"), the pills, and the library picker. */
import { emptyState } from "./messages.js";
import { boot, chip, convId, pills, searchable, shared, thread } from "./state.js";

const rag = window.rag;
const { api, el, toast, icon, timeAgo, count, badge, isFinal, gettext, ngettext, tr } = rag;

function pillState(doc) {
  if (doc.status === "failed") return ["err", `${gettext("Failed")} — ${doc.index_error || gettext("indexing failed")}`];
  if (doc.status === "indexed") return ["ok", gettext("Indexed")];
  if (doc.chunk_count > 0) return ["busy", gettext("Re-indexing… (the current version answers)")];
  if (doc.status === "uploaded") return ["warn", gettext("Waiting to index — not searchable yet")];
  return ["busy", gettext("Indexing… not searchable yet")];
}

// The collection the conversation is narrowed to (the header's picker, chat_collection.js, says when it changes).
// null: everything; undefined: none chosen in this page yet and the saved one is not readable any more.
let narrowedTo = (boot.collections || []).find((c) => c.slug === shared.conversation.collection)
  || (shared.conversation.collection ? undefined : null);
document.addEventListener("rag:collection", (e) => { narrowedTo = e.detail.collection; renderScope(); });

export function renderScope() {
  const notReady = shared.attached.filter((d) => !(d.chunk_count > 0)).length;
  chip.replaceChildren(icon("search"), gettext("Searching:") + " ", shared.attached.length
    ? el("strong", {}, count(ngettext("%(n)s attached document", "%(n)s attached documents", shared.attached.length), shared.attached.length))
    : narrowedTo ? el("strong", {}, `${narrowedTo.name} (${count(ngettext("%(n)s document", "%(n)s documents", narrowedTo.searchable), narrowedTo.searchable)})`)
    : narrowedTo === undefined ? el("strong", {}, gettext("a collection you can no longer read"))
    : el("strong", {}, `${(boot.collections || []).length ? gettext("all your documents and collections") : gettext("all your documents")} (${rag.formatNumber(searchable)})`),
  ...(notReady ? [el("span", {}, ` · ${count(ngettext("%(n)s not indexed yet", "%(n)s not indexed yet", notReady), notReady)}`)] : []));
  pills.replaceChildren(...shared.attached.map((doc) => {
    const [kind, label] = pillState(doc);
    const remove = el("button", { type: "button", "aria-label": tr(gettext("Detach %(title)s"), { title: doc.title }), title: gettext("Detach") }, icon("x"));
    remove.addEventListener("click", () => detach(doc));
    return el("li", { class: "pill", dataset: { id: doc.id, status: doc.status } },
      el("span", { class: `pill-state ${kind}`, title: label, "aria-hidden": "true" }),
      el("a", { class: "pill-name", href: `/documents/${doc.id}/`, title: `${doc.name} — ${label}` }, doc.title),
      el("span", { class: "visually-hidden" }, `(${label})`), remove);
  }));
  if (thread.querySelector("#thread-empty")) thread.replaceChildren(emptyState());
  scheduleAttachedPoll();
}

let attachedTimer = 0;
function scheduleAttachedPoll() {
  clearTimeout(attachedTimer);
  if (!convId || !shared.attached.some((d) => !isFinal(d))) return; // before the first question: shown as picked
  attachedTimer = setTimeout(async () => {
    try { shared.attached = await api("GET", `/api/conversations/${convId}/documents/`); } catch (err) { /* try again */ }
    renderScope();
  }, 2000);
}

async function detach(doc) {
  const index = shared.attached.findIndex((d) => d.id === doc.id);
  try {
    if (convId) await api("DELETE", `/api/conversations/${convId}/documents/${doc.id}/`);
  } catch (err) {
    if (err.status !== 404) { toast(err.message, "error"); return; }
  }
  shared.attached = shared.attached.filter((d) => d.id !== doc.id);
  renderScope();
  toast(tr(gettext("Detached %(title)s"), { title: doc.title }));
  const next = pills.children[Math.min(index, pills.children.length - 1)];
  (next ? next.querySelector("button") : document.getElementById("attach-btn")).focus();
}

const picker = document.getElementById("picker");
const pickerList = document.getElementById("picker-list");
const pickerQ = document.getElementById("picker-q");
const pickerIndexed = document.getElementById("picker-indexed");
const pickerOk = document.getElementById("picker-ok");
const pickerCount = document.getElementById("picker-count");
let library = null;
let libraryNext = null;
let selected = new Set();

async function loadLibrary(url) {
  const page = await api("GET", url);
  library = (library || []).concat(page.results.filter((d) => !(library || []).some((x) => x.id === d.id)));
  libraryNext = page.next;
}

function pickerChanges() {
  const current = new Set(shared.attached.map((d) => d.id));
  return { add: [...selected].filter((id) => !current.has(id)), remove: [...current].filter((id) => !selected.has(id)) };
}

function renderPicker() {
  const q = pickerQ.value.trim().toLowerCase();
  const onlyIndexed = pickerIndexed.checked;
  pickerList.replaceChildren();
  if (library === null) { pickerList.append(el("li", { class: "picker-empty" }, gettext("Loading your library…"))); return; }
  const shown = library.filter((d) => (!q || `${d.title} ${d.name}`.toLowerCase().includes(q)) && (!onlyIndexed || d.chunk_count > 0 || selected.has(d.id)));
  for (const d of shown) {
    const box = el("input", { type: "checkbox", value: d.id });
    box.checked = selected.has(d.id);
    box.addEventListener("change", () => { if (box.checked) selected.add(d.id); else selected.delete(d.id); updatePickerFoot(); });
    const meta = [d.name, rag.formatBytes(d.size), d.pages_total ? count(ngettext("%(n)s page", "%(n)s pages", d.pages_total), d.pages_total) : null, tr(gettext("added %(when)s"), { when: timeAgo(d.created_at) })].filter(Boolean).join(" · ");
    pickerList.append(el("li", { class: "picker-item" }, el("label", {}, box,
      el("span", { class: "p-text" }, el("span", { class: "p-name" }, d.title), el("span", { class: "p-meta" }, meta)),
      badge(d, { short: true }))));
  }
  if (!shown.length) {
    pickerList.append(el("li", { class: "picker-empty" }, library.length
      ? (onlyIndexed ? gettext("No indexed document matches. Untick “Indexed only” to see the others.") : gettext("No document matches."))
      : el("span", {}, gettext("Your library is empty.") + " ", el("a", { href: "/library/" }, gettext("Upload documents first.")))));
  }
  if (libraryNext) {
    const more = el("button", { type: "button", class: "btn btn-sm" }, gettext("Show more"));
    more.addEventListener("click", async () => { more.disabled = true; await loadLibrary(libraryNext); renderPicker(); });
    pickerList.append(el("li", { class: "picker-empty" }, more));
  }
  updatePickerFoot();
}

function updatePickerFoot() {
  const { add, remove } = pickerChanges();
  pickerCount.textContent = count(ngettext("%(n)s selected", "%(n)s selected", selected.size), selected.size);
  pickerOk.textContent = !add.length && !remove.length ? gettext("Done") : remove.length ? gettext("Apply changes") : count(ngettext("Attach %(n)s document", "Attach %(n)s documents", add.length), add.length);
}

const attachBtn = document.getElementById("attach-btn");
attachBtn.addEventListener("click", async () => {
  selected = new Set(shared.attached.map((d) => d.id));
  pickerQ.value = "";
  library = null;
  renderPicker();
  picker.showModal();
  pickerQ.focus();
  try {
    await loadLibrary("/api/documents/?page_size=100");
  } catch (err) {
    library = [];
    toast(err.message, "error");
  }
  renderPicker();
});
pickerQ.addEventListener("input", renderPicker);
pickerIndexed.addEventListener("change", renderPicker);
document.getElementById("picker-cancel").addEventListener("click", () => picker.close());
document.getElementById("picker-x").addEventListener("click", () => picker.close());
picker.addEventListener("close", () => attachBtn.focus());
document.getElementById("picker-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const { add, remove } = pickerChanges();
  pickerOk.disabled = true;
  try {
    if (!convId) { // not started yet: the first question attaches them (composer.js)
      shared.attached = library.filter((d) => selected.has(d.id)).map((d) => (
        { id: d.id, title: d.title, name: d.name, status: d.status, chunk_count: d.chunk_count, index_error: d.index_error || "" }));
    } else {
      for (const id of add) await api("POST", `/api/conversations/${convId}/documents/`, { document_id: id });
      for (const id of remove) await api("DELETE", `/api/conversations/${convId}/documents/${id}/`);
      shared.attached = await api("GET", `/api/conversations/${convId}/documents/`);
    }
    renderScope();
    if (add.length) toast(count(ngettext("Attached %(n)s document", "Attached %(n)s documents", add.length), add.length));
    picker.close();
  } catch (err) {
    toast(err.message, "error");
  } finally {
    pickerOk.disabled = false;
  }
});
