/* The conversation's title: shown, renamed in place, and the conversation deleted. */
import { convId, shared } from "./state.js";

const { api, el, toast, confirmDialog, gettext } = window.rag;

const titleEl = document.getElementById("chat-title");
// Nothing to rename or delete before the first question creates the conversation.
const owned = [document.getElementById("rename-btn"), document.getElementById("export-btn"),
  document.getElementById("export-pdf-btn"), document.getElementById("delete-btn")];
for (const b of owned) b.hidden = !convId;
document.addEventListener("rag:conversation", () => {
  for (const b of owned) b.hidden = false;
  document.getElementById("export-btn").href = `/c/${convId}/export.md`;
  document.getElementById("export-pdf-btn").href = `/c/${convId}/export.pdf`;
  showTitle();
});
export function showTitle() {
  const text = shared.conversation.title || gettext("New conversation");
  titleEl.textContent = text;
  document.title = `${text} · ragsite`;
}
export async function refreshConversation() {
  try { shared.conversation = await api("GET", `/api/conversations/${convId}/`); showTitle(); } catch (err) { /* keep the old title */ }
}

document.getElementById("rename-btn").addEventListener("click", (e) => {
  const head = document.getElementById("chat-head");
  const opener = e.currentTarget;
  const input = el("input", { type: "text", value: shared.conversation.title, maxlength: "200", "aria-label": gettext("Conversation title") });
  const form = el("form", {}, input, el("button", { type: "submit", class: "btn btn-primary btn-sm" }, gettext("Save")),
    el("button", { type: "button", class: "btn btn-sm", onclick: () => done() }, gettext("Cancel")));
  const hidden = [...head.children];
  for (const n of hidden) n.hidden = true;
  head.append(form);
  input.focus();
  input.select();
  function done() { form.remove(); for (const n of hidden) n.hidden = false; opener.focus(); }
  input.addEventListener("keydown", (ev) => { if (ev.key === "Escape") { ev.preventDefault(); done(); } });
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      shared.conversation = await api("PATCH", `/api/conversations/${convId}/`, { title: input.value });
      showTitle();
      done();
      document.dispatchEvent(new CustomEvent("rag:conversation", { detail: { conversation: shared.conversation } }));
    } catch (err) { toast(err.message, "error"); }
  });
});

document.getElementById("delete-btn").addEventListener("click", async () => {
  const ok = await confirmDialog({ title: gettext("Delete this conversation?"), message: gettext("Its questions and answers are deleted. Your documents stay in your library."),
    confirm: gettext("Delete"), danger: true });
  if (!ok) return;
  try {
    await api("DELETE", `/api/conversations/${convId}/`);
    location.href = "/c/new/";
  } catch (err) { toast(err.message, "error"); }
});
