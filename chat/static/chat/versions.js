/* Versions of an answer: a regenerated answer is kept beside the earlier ones (same metadata.question_id),
   and versions of any question edited and sent again (metadata.version_of), the conversation branching
   there (metadata.after: the question version a question followed; chat/threads.py holds the same rule);
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

// The versions of each question: an edited question (metadata.version_of: its first version's id) is kept
// beside the earlier ones, each with its own answers.
const chosenQuestion = new Map(); // first version's id -> the question version the reader switched to
function questionGroups() {
  const byRoot = new Map();
  for (const m of messages.values()) {
    if (m.role !== "user") continue;
    const root = (m.metadata && m.metadata.version_of) || m.id;
    if (!byRoot.has(root)) byRoot.set(root, []);
    byRoot.get(root).push(m.id);
  }
  for (const ids of byRoot.values()) ids.sort((a, b) => a - b);
  return byRoot;
}

function switcher(node, ids, index, label, go) {
  let box = node.querySelector(":scope > .versions");
  if (ids.length < 2) { if (box) box.remove(); return; }
  if (!box) { box = el("div", { class: "versions", role: "group", "aria-label": label }); node.prepend(box); }
  box.replaceChildren(
    el("button", { type: "button", class: "btn btn-ghost btn-sm", "aria-label": gettext("Previous version"), disabled: index === 0, onclick: () => go(index - 1) }, "‹"),
    el("span", { class: "versions-count" }, fill(gettext("%(n)s/%(total)s"), { n: index + 1, total: ids.length })),
    el("button", { type: "button", class: "btn btn-ghost btn-sm", "aria-label": gettext("Next version"), disabled: index === ids.length - 1, onclick: () => go(index + 1) }, "›"));
}

const rootOf = (m) => (m.metadata && m.metadata.version_of) || m.id;

// Each question's id -> the question version it followed (null: the first turn); chat/threads.py's parents().
function parentsOf() {
  const questions = [...messages.values()].filter((m) => m.role === "user").sort((a, b) => a.id - b.id);
  const result = new Map();
  questions.forEach((q, index) => {
    const meta = q.metadata || {};
    if ("after" in meta) { result.set(q.id, meta.after); return; }
    if (meta.version_of && result.has(meta.version_of)) { result.set(q.id, result.get(meta.version_of)); return; }
    const earlier = questions.slice(0, index).filter((o) => rootOf(o) !== rootOf(q));
    result.set(q.id, earlier.length ? earlier[earlier.length - 1].id : null);
  });
  return result;
}

/** Show the thread (chat/threads.py): from the first turn, at each turn the question version the reader
    chose (or whose answer they chose, else the newest), then the turn asked after that version; of each
    answer the chosen version, else the newest. Each version with its switcher. */
export function applyVersions() {
  const answers = groups();
  const shownAnswer = new Map(); // question id -> the answer version shown
  for (const [question, ids] of answers) {
    const stored = ids.find((id) => (messages.get(id).metadata || {}).chosen);
    shownAnswer.set(question, ids.includes(chosen.get(question)) ? chosen.get(question) : (stored || ids[ids.length - 1]));
  }
  const byParent = new Map();
  for (const [question, parent] of parentsOf()) {
    if (!byParent.has(parent)) byParent.set(parent, []);
    byParent.get(parent).push(question);
  }
  const onPath = new Set();
  let lastShown = null;
  let parent = null;
  while ((byParent.get(parent) || []).length) {
    const siblings = byParent.get(parent).map((id) => messages.get(id));
    const root = Math.max(...siblings.map(rootOf));
    const ids = siblings.filter((q) => rootOf(q) === root).map((q) => q.id).sort((a, b) => a - b);
    const stored = ids.find((q) => (answers.get(q) || []).some((a) => (messages.get(a).metadata || {}).chosen));
    const shown = ids.includes(chosenQuestion.get(root)) ? chosenQuestion.get(root) : (stored || ids[ids.length - 1]);
    if (onPath.has(shown)) break;
    onPath.add(shown);
    ids.forEach((id, index) => {
      const node = document.getElementById(`msg-${id}`);
      if (!node) return;
      switcher(node, ids, index, gettext("Versions of this question"), (to) => {
        chosenQuestion.set(root, ids[to]);
        applyVersions();
        document.querySelector(`#msg-${ids[to]} .versions button:not([disabled])`)?.focus();
        const answer = shownAnswer.get(ids[to]);
        if (answer) remember(answer, ids.flatMap((q) => answers.get(q) || []));
      });
    });
    if (shownAnswer.has(shown)) onPath.add(shownAnswer.get(shown));
    lastShown = shownAnswer.get(shown) || null;
    parent = shown;
  }
  // Regenerate is offered on the answer that ends the thread shown (the server allows no other: a later
  // question was asked after the others), whichever branch that is.
  for (const button of thread.querySelectorAll(".regen-btn")) button.hidden = Number(button.dataset.message) !== lastShown;
  for (const m of messages.values()) {
    const node = document.getElementById(`msg-${m.id}`);
    if (!node) continue;
    if (m.role === "user") node.hidden = !onPath.has(m.id);
    else if (m.metadata && m.metadata.question_id && answers.has(m.metadata.question_id)) node.hidden = !onPath.has(m.id);
  }
  for (const [question, ids] of answers) {
    ids.forEach((id, index) => {
      const node = document.getElementById(`msg-${id}`);
      if (!node) return;
      switcher(node, ids, index, gettext("Versions of this answer"), (to) => {
        chosen.set(question, ids[to]);
        applyVersions();
        document.querySelector(`#msg-${ids[to]} .versions button:not([disabled])`)?.focus();
        remember(ids[to], ids);
      });
    });
  }
}

/** After an edited question was sent, show it (its turn's earlier choice is forgotten on the server). */
export function showLatestQuestion(asked) {
  const root = (asked.metadata && asked.metadata.version_of) || asked.id;
  chosenQuestion.delete(root);
  const turn = new Set(questionGroups().get(root) || []);
  for (const m of messages.values()) if (m.metadata && turn.has(m.metadata.question_id)) delete m.metadata.chosen;
  applyVersions();
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

/** After a new version arrives, show it: the server forgot the turn's earlier choice when it was asked for
    (and chose the new version itself when it answers an earlier version of an edited question). */
export function showLatest(fresh) {
  const question = fresh.metadata.question_id;
  chosen.delete(question);
  const asked = messages.get(question);
  const turn = new Set((asked && questionGroups().get(rootOf(asked))) || [question]);
  for (const m of messages.values()) {
    if (m.id !== fresh.id && m.metadata && turn.has(m.metadata.question_id)) delete m.metadata.chosen;
  }
  applyVersions();
}
