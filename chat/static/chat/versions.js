/* Versions of an answer: a regenerated answer is kept beside the earlier ones (same metadata.question_id);
   the thread shows one of them, the newest unless the reader switched, with "‹ 2/3 ›" to switch. The
   switch is remembered on the server (metadata.chosen, POST …/choose/), so a reload shows the same one. */
import { convId, messages, thread } from "./state.js";

const { el, api, toast } = window.rag;
const gettext = window.gettext || ((text) => text);
const fill = (text, values) => text.replace(/%\((\w+)\)s/g, (_, key) => String(values[key]));
const chosen = new Map(); // question id -> the answer id the reader switched to

function groups() {
  const byQuestion = new Map();
  for (const m of messages.values()) {
    const q = m.role === "assistant" && m.metadata && m.metadata.question_id;
    if (!q) continue;
    if (!byQuestion.has(q)) byQuestion.set(q, []);
    byQuestion.get(q).push(m.id);
  }
  for (const ids of byQuestion.values()) ids.sort((a, b) => a - b);
  return byQuestion;
}

/** Show one version of each answer and its switcher (called after the thread changes). */
export function applyVersions() {
  for (const [question, ids] of groups()) {
    const latest = ids[ids.length - 1];
    const stored = ids.find((id) => (messages.get(id).metadata || {}).chosen);
    const shown = ids.includes(chosen.get(question)) ? chosen.get(question) : (stored || latest);
    ids.forEach((id, index) => {
      const node = document.getElementById(`msg-${id}`);
      if (!node) return;
      node.hidden = id !== shown;
      let box = node.querySelector(":scope > .versions");
      if (ids.length < 2) { if (box) box.remove(); return; }
      if (!box) { box = el("div", { class: "versions", role: "group", "aria-label": gettext("Versions of this answer") }); node.prepend(box); }
      const go = (to) => {
        chosen.set(question, ids[to]);
        applyVersions();
        document.querySelector(`#msg-${ids[to]} .versions button:not([disabled])`)?.focus();
        remember(ids[to], ids);
      };
      box.replaceChildren(
        el("button", { type: "button", class: "btn btn-ghost btn-sm", "aria-label": gettext("Previous version"), disabled: index === 0, onclick: () => go(index - 1) }, "‹"),
        el("span", { class: "versions-count" }, fill(gettext("%(n)s/%(total)s"), { n: index + 1, total: ids.length })),
        el("button", { type: "button", class: "btn btn-ghost btn-sm", "aria-label": gettext("Next version"), disabled: index === ids.length - 1, onclick: () => go(index + 1) }, "›"));
    });
  }
}

/** Keep the reader's choice on the server (the page already shows it). */
async function remember(id, ids) {
  try {
    await api("POST", `/api/conversations/${convId}/messages/${id}/choose/`);
    for (const other of ids) {
      const m = messages.get(other);
      if (m && m.metadata) { if (other === id) m.metadata.chosen = true; else delete m.metadata.chosen; }
    }
  } catch (err) {
    toast(err.message, "error");
  }
}

/** After a new version arrives, show it (the server forgot the earlier choice when it was asked for). */
export function showLatest(question) {
  chosen.delete(question);
  for (const m of messages.values()) if (m.metadata && m.metadata.question_id === question) delete m.metadata.chosen;
  applyVersions();
}

/** Whether `m` answers the conversation's last question (the newest message is one of its versions). */
export function isLastAnswer(m) {
  let last = null;
  for (const other of messages.values()) if (!last || other.id > last.id) last = other;
  return Boolean(m && last && last.role === "assistant" && (last.metadata || {}).question_id === (m.metadata || {}).question_id);
}
