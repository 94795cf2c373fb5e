/* The conversation sidebar: the user's conversations (GET /api/conversations/?q=&origin=, searched on the
   server over titles and messages), pinned first, then by date (today, yesterday, the last 7 days, older);
   rename in place, pin, delete after a confirmation. Collapsible on a desktop (remembered), a drawer on a
   phone. Reads the page's state; the title module shows the renamed current conversation. */
import { convId, shared } from "./state.js";
import { showTitle } from "./title.js";

const { api, el, icon, toast, confirmDialog } = window.rag;
const gettext = window.gettext || ((text) => text);
const interpolate = (text, values) => text.replace(/%\((\w+)\)s/g, (_, key) => String(values[key]));

const sidebar = document.getElementById("sidebar");
const list = document.getElementById("sidebar-list");
const search = document.getElementById("sidebar-q");
const origin = document.getElementById("sidebar-origin");
const status = document.getElementById("sidebar-status");
const toggle = document.getElementById("sidebar-toggle");
const phone = window.matchMedia("(max-width: 760px)");
const STORED = "ragsite.sidebar"; // "hidden" when collapsed on a desktop

// --- open and closed -----------------------------------------------------------------------------------
function isOpen() { return !document.body.classList.contains("sidebar-hidden"); }
function setOpen(open, { focus = false } = {}) {
  document.body.classList.toggle("sidebar-hidden", !open);
  toggle.setAttribute("aria-expanded", String(open));
  if (!phone.matches) {
    try { localStorage.setItem(STORED, open ? "shown" : "hidden"); } catch (err) { /* private mode */ }
  }
  if (focus) (open ? search : toggle).focus();
}
function initialState() {
  if (phone.matches) return false;
  try { return localStorage.getItem(STORED) !== "hidden"; } catch (err) { return true; }
}
setOpen(initialState());
phone.addEventListener("change", () => setOpen(initialState()));
toggle.addEventListener("click", () => setOpen(!isOpen(), { focus: true }));
document.getElementById("sidebar-close").addEventListener("click", () => setOpen(false, { focus: true }));
document.getElementById("sidebar-backdrop").addEventListener("click", () => setOpen(false, { focus: true }));
sidebar.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && phone.matches && !e.target.closest(".sb-rename")) { e.stopPropagation(); setOpen(false, { focus: true }); }
});

// --- the list ------------------------------------------------------------------------------------------
function dayStart(date) { return new Date(date.getFullYear(), date.getMonth(), date.getDate()).getTime(); }
function groupOf(c, today) {
  if (c.pinned) return gettext("Pinned");
  const day = dayStart(new Date(c.updated_at));
  if (day >= today) return gettext("Today");
  if (day >= today - 86400000) return gettext("Yesterday");
  if (day >= today - 7 * 86400000) return gettext("Last 7 days");
  return gettext("Older");
}

const PIN = "M9 3h6l-1 6 3 3v2h-4v6l-1 1-1-1v-6H6v-2l3-3z";
function pinIcon() {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", PIN);
  path.setAttribute("fill", "currentColor");
  svg.append(path);
  return svg;
}

const ORIGIN_LABEL = { api: gettext("API"), mcp: gettext("MCP") };
let conversations = [];
let nextPage = null; // the API's address of the next page (past the first PAGE conversations), or null
let loading = 0;
const PAGE = "100";

export async function loadConversations() {
  const ticket = ++loading;
  const params = new URLSearchParams({ page_size: PAGE });
  if (search.value.trim()) params.set("q", search.value.trim());
  if (origin.value) params.set("origin", origin.value);
  try {
    const page = await api("GET", `/api/conversations/?${params}`);
    if (ticket !== loading) return; // a newer search answered first
    conversations = page.results;
    nextPage = page.next;
    render();
    status.textContent = params.has("q")
      ? interpolate(gettext("%(count)s conversations found"), { count: page.count }) : "";
  } catch (err) {
    if (ticket === loading) toast(err.message, "error");
  }
}

// The next page: from the "Show more" button, or by itself when the button scrolls into view.
async function loadMore() {
  if (!nextPage) return;
  const ticket = loading;
  const url = new URL(nextPage, location.href);
  nextPage = null; // one request at a time
  try {
    const page = await api("GET", url.pathname + url.search);
    if (ticket !== loading) return; // a new search replaced the list meanwhile
    const known = new Set(conversations.map((c) => c.id));
    conversations = conversations.concat(page.results.filter((c) => !known.has(c.id)));
    nextPage = page.next;
    const focused = document.activeElement && document.activeElement.classList.contains("sb-more");
    render();
    if (focused) (list.querySelector(".sb-more") || list.querySelectorAll(".sb-link")[known.size] || search).focus();
  } catch (err) {
    nextPage = url.href;
    toast(err.message, "error");
  }
}
const nearEnd = "IntersectionObserver" in window
  ? new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) loadMore(); }, { root: list, rootMargin: "200px" })
  : null;

function render() {
  const today = dayStart(new Date());
  const groups = new Map();
  for (const c of conversations) {
    const name = groupOf(c, today);
    if (!groups.has(name)) groups.set(name, []);
    groups.get(name).push(c);
  }
  const parts = [];
  let n = 0;
  for (const [name, rows] of groups) {
    const id = `sb-group-${n++}`;
    parts.push(el("h2", { class: "sb-group", id }, name),
      el("ul", { class: "sb-items", "aria-labelledby": id }, rows.map(row)));
  }
  if (!conversations.length) {
    parts.push(el("p", { class: "sb-empty" }, search.value.trim() || origin.value
      ? gettext("No conversation matches.") : gettext("No conversations yet. Ask a question to start one.")));
  }
  if (nextPage) {
    const more = el("button", { type: "button", class: "btn btn-ghost btn-sm sb-more" }, gettext("Show more conversations"));
    more.addEventListener("click", loadMore);
    parts.push(more);
  }
  if (nearEnd) nearEnd.disconnect();
  list.replaceChildren(...parts);
  const more = list.querySelector(".sb-more");
  if (more && nearEnd) nearEnd.observe(more);
}

function row(c) {
  const title = c.title || gettext("New conversation");
  const current = c.id === convId;
  const link = el("a", { class: "sb-link", href: `/c/${c.id}/`, "aria-current": current ? "page" : null, title },
    el("span", { class: "sb-title" }, title),
    ORIGIN_LABEL[c.origin] ? el("span", { class: "sb-origin", title: gettext("Started from") }, ORIGIN_LABEL[c.origin]) : null);
  const pin = el("button", { type: "button", class: "sb-btn sb-pin", "aria-pressed": String(!!c.pinned),
    "aria-label": interpolate(gettext("Pin %(title)s"), { title }), title: c.pinned ? gettext("Unpin") : gettext("Pin") }, pinIcon());
  pin.addEventListener("click", () => setPinned(c, !c.pinned));
  const rename = el("button", { type: "button", class: "sb-btn sb-rename-btn",
    "aria-label": interpolate(gettext("Rename %(title)s"), { title }), title: gettext("Rename") }, icon("pencil"));
  const item = el("li", { class: `sb-item${current ? " is-current" : ""}`, dataset: { id: c.id } }, link, pin, rename);
  rename.addEventListener("click", () => startRename(c, item));
  const remove = el("button", { type: "button", class: "sb-btn sb-delete",
    "aria-label": interpolate(gettext("Delete %(title)s"), { title }), title: gettext("Delete") }, icon("trash"));
  remove.addEventListener("click", () => remove_(c));
  item.append(remove);
  return item;
}

function focusRow(id, selector) {
  const item = list.querySelector(`.sb-item[data-id="${id}"]`);
  ((item && item.querySelector(selector)) || search).focus();
}

async function setPinned(c, pinned) {
  try {
    await api("PATCH", `/api/conversations/${c.id}/`, { pinned });
    toast(pinned ? gettext("Pinned to the top.") : gettext("Unpinned."));
    await loadConversations();
    focusRow(c.id, ".sb-pin");
  } catch (err) { toast(err.message, "error"); }
}

function startRename(c, item) {
  const input = el("input", { type: "text", value: c.title, maxlength: "200", "aria-label": gettext("Conversation title") });
  const form = el("form", { class: "sb-rename" }, input,
    el("button", { type: "submit", class: "btn btn-primary btn-sm" }, gettext("Save")));
  const kept = [...item.children];
  item.replaceChildren(form);
  input.focus();
  input.select();
  const cancel = () => { item.replaceChildren(...kept); focusRow(c.id, ".sb-rename-btn"); };
  input.addEventListener("keydown", (e) => { if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); cancel(); } });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const saved = await api("PATCH", `/api/conversations/${c.id}/`, { title: input.value });
      if (saved.id === convId) { shared.conversation = { ...shared.conversation, title: saved.title }; showTitle(); }
      await loadConversations();
      focusRow(c.id, ".sb-rename-btn");
    } catch (err) { toast(err.message, "error"); }
  });
}

async function remove_(c) {
  const ok = await confirmDialog({
    title: gettext("Delete this conversation?"),
    message: interpolate(gettext("“%(title)s”: its questions and answers are deleted. Your documents stay in your library."),
      { title: c.title || gettext("New conversation") }),
    confirm: gettext("Delete"), danger: true });
  if (!ok) return;
  try {
    await api("DELETE", `/api/conversations/${c.id}/`);
  } catch (err) {
    if (err.status !== 404) { toast(err.message, "error"); return; }
  }
  if (c.id === convId) { location.href = "/c/new/"; return; }
  toast(gettext("Conversation deleted."));
  await loadConversations();
  search.focus();
}

let debounce = 0;
search.addEventListener("input", () => { clearTimeout(debounce); debounce = setTimeout(loadConversations, 250); });
origin.addEventListener("change", loadConversations);
// The first question created this conversation, or the header renamed it.
document.addEventListener("rag:conversation", loadConversations);
loadConversations();
