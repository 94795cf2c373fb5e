/* The thread's messages: a question, an answer streaming in, a final answer with its footer, a failed
   one with Retry (handled by retry.js); upsert() puts a message in its place, renderLive() redraws
   answers in flight. */
import { citationsOf, labelChip, richText, sourceLabel } from "./citations.js";
import { caretHost, patch } from "./markdown.js";
import { showSources, toggleSources } from "./sources.js";
import { feedbackOf, IN_FLIGHT, liveText, messages, panel, scroller, shared, thread } from "./state.js";
import { applyVersions } from "./versions.js";
import { waitBox } from "./waiting.js";

const { el, icon, timeAgo, count, ngettext } = window.rag;

function thinking(label) {
  return el("div", { class: "thinking" }, el("span", { class: "dots", "aria-hidden": "true" }, el("span"), el("span"), el("span")), label);
}

const gettext = window.gettext || ((text) => text); // the JavaScript catalogue (/jsi18n/, djangojs.po)

function modeNote(m) {
  const mode = m.metadata && m.metadata.mode;
  if (mode === "extractive" && m.metadata.model_unavailable) return m.metadata.notice; // translated by the server
  if (mode === "extractive") return gettext("No language model is configured, so this answer quotes the most relevant passages of your documents.");
  if (mode === "qa_direct" || mode === "approved_answer") return gettext("An approved answer to this question.");
  if (mode === "general") return gettext("Not from your documents: nothing relevant was found in them, so this is a general answer.");
  return null;
}

/** Extractive mode is said once per conversation: on its first extractive answer the page knows. */
function firstExtractive(m) {
  for (const other of messages.values()) {
    if (other.id < m.id && other.role === "assistant" && other.metadata && other.metadata.mode === "extractive") return false;
  }
  return true;
}

function streamingBody(m) {
  const text = (liveText.get(m.id) || "").replace(/[[［【][^\]］】\n]{0,24}$/, ""); // hide a tag still being written
  const cites = citationsOf(m);
  const box = el("div", { class: "answer-body" });
  if (!text) {
    box.append(thinking(m.status === "pending" ? gettext("Searching your documents…") : gettext("Writing the answer…")));
    return box;
  }
  // The whole text as Markdown, rendered again on each frame's batch of tokens; patch() keeps the
  // blocks already written, so only the one being written changes.
  const section = el("div", { class: "section md" }, richText(text, cites, m.id));
  caretHost(section).append(el("span", { class: "caret", "aria-hidden": "true" }));
  box.append(section);
  return box;
}

function finalBody(m) {
  const cites = citationsOf(m);
  const box = el("div", { class: "answer-body" });
  let sections = (m.metadata && m.metadata.sections) || null;
  if (!sections || !sections.length) sections = (m.content || "").split(/\n{2,}/).filter(Boolean).map((text) => ({ text, source_ids: [] }));
  // The "no language model is configured" note once per conversation; a model that failed is said every time.
  const note = m.metadata && m.metadata.mode === "extractive" && !m.metadata.model_unavailable && !firstExtractive(m)
    ? null : modeNote(m);
  if (m.metadata && m.metadata.mode === "extractive" && sections.length && !(sections[0].source_ids || []).length) {
    sections = sections.slice(1); // the extractor's own "no language model" line: shown as the note below
  }
  if (note) box.append(el("div", { class: "note-extractive", dataset: { mode: m.metadata.mode } }, icon("info"), " ", note));
  for (const s of sections) {
    const para = el("div", { class: "section md" }, richText(s.text, cites, m.id));
    if (s.ungrounded_numbers && s.ungrounded_numbers.length) { // chat/grounding.py
      para.classList.add("ungrounded");
      para.append(el("span", { class: "ungrounded-note", title: s.ungrounded_numbers.join(", ") },
        icon("alert"), " ", gettext("not found in the cited sources")));
    }
    box.append(para);
  }
  const stopped = m.metadata && m.metadata.stopped;
  if (!sections.length && !note && !stopped) box.append(el("p", { class: "section muted" }, "(empty answer)"));
  if (stopped) box.append(el("p", { class: "msg-stopped" }, gettext("Stopped: the answer may be incomplete.")));
  const wait = waitBox(m);
  if (wait) box.append(wait);
  return box;
}

function footer(m) {
  const cites = citationsOf(m);
  const foot = el("div", { class: "msg-foot" });
  const n = cites.numbers.size;
  if (n) {
    const button = el("button", { type: "button", class: "btn btn-sm sources-btn", "aria-controls": "sources-panel", "aria-expanded": "false",
      dataset: { message: m.id } }, icon("link"), count(ngettext("%(n)s source", "%(n)s sources", n), n));
    button.addEventListener("click", () => toggleSources(m.id, button));
    foot.append(button);
  } else if (m.metadata && m.metadata.mode && !["plain", "general", "refused", "waiting"].includes(m.metadata.mode)) {
    foot.append(el("span", {}, gettext("No sources cited")));
  }
  const usage = m.metadata && m.metadata.llm_usage;
  if (usage && usage.model && ["llm", "agentic", "documents", "general", "agent"].includes(m.metadata.mode)) foot.append(el("span", {}, usage.model));
  const agent = m.metadata && m.metadata.agent;
  if (agent && ["agentic", "agent"].includes(m.metadata.mode)) {
    const queries = (agent.searches || []).map((s) => `“${s.query}”`).join(", ");
    foot.append(el("span", { title: queries ? window.rag.tr(rag.gettext("Searched for %(queries)s"), { queries }) : gettext("Answered without searching") },
      count(ngettext("%(n)s search", "%(n)s searches", (agent.searches || []).length), (agent.searches || []).length)));
  }
  // Where the answer came from: one label per kind of source it cites.
  const origins = new Map();
  for (const c of cites.byTag.values()) if (cites.numbers.has(c.source_id)) origins.set(sourceLabel(c), c);
  const originBox = el("span", { class: "answer-origin" });
  for (const c of origins.values()) originBox.append(labelChip(c), " ");
  if (origins.size) foot.append(originBox);
  foot.append(el("span", { title: new Date(m.updated_at).toLocaleString() }, timeAgo(m.updated_at)));
  // Copy the answer (actions.js handles the clicks): as plain text, or as the Markdown it was written in.
  foot.append(el("span", { class: "msg-actions" },
    el("button", { type: "button", class: "btn btn-ghost btn-sm copy-btn", dataset: { message: m.id, format: "plain" },
      title: gettext("Copy the answer as plain text") }, icon("copy"), gettext("Copy")),
    el("button", { type: "button", class: "btn btn-ghost btn-sm copy-btn", dataset: { message: m.id, format: "markdown" },
      title: gettext("Copy the answer as Markdown, with its source numbers") }, gettext("Markdown")),
    el("button", { type: "button", class: "btn btn-ghost btn-sm regen-btn", dataset: { message: m.id },
      title: gettext("Write a new version of this answer; the earlier one is kept") }, icon("refresh"), gettext("Regenerate")),
    ...feedbackButtons(m, gettext)));
  return foot;
}

/** 👍 / 👎, pressed as the stored feedback says (feedback.js handles the clicks and the reason form). */
function feedbackButtons(m, gettext) {
  const stored = feedbackOf(m);
  const reason = stored && stored.reason ? ` (${stored.reason.replace("_", " ")})` : "";
  return [["up", "thumbs-up", gettext("Helpful")], ["down", "thumbs-down", gettext("Not helpful")]].map(([rating, face, label]) => {
    const pressed = Boolean(stored && stored.rating === rating);
    return el("button", { type: "button", class: "btn btn-ghost btn-sm feedback-btn", "aria-pressed": String(pressed),
      "aria-label": label, dataset: { message: m.id, rating },
      title: pressed ? `${label}${rating === "down" ? reason : ""} — ${gettext("press again to withdraw")}` : label }, icon(face));
  });
}

function errorBox(m) {
  const retry = el("button", { type: "button", class: "btn btn-sm" }, icon("refresh"), gettext("Retry")); // retry.js handles it
  return el("div", { class: "msg-error", role: "alert" }, icon("alert"),
    el("p", {}, m.error || gettext("The answer could not be produced.")), retry);
}

function modelDownRetry() {
  // The passages stood in for the model: asking it again is one click (retry.js handles the button).
  const retry = el("button", { type: "button", class: "btn btn-sm" }, icon("refresh"), gettext("Ask the language model again"));
  return el("div", { class: "msg-retry" }, retry);
}

export function renderMessage(m) {
  if (m.role === "user") {
    // Edit: the question goes back into the box, to change and ask again (regenerate.js handles it).
    const edit = el("button", { type: "button", class: "btn btn-ghost btn-sm edit-btn", dataset: { message: m.id },
      "aria-label": gettext("Edit this question and ask again"), title: gettext("Edit and ask again") }, icon("pencil"));
    return el("article", { class: "msg msg-user", id: `msg-${m.id}`, "aria-label": gettext("Question") }, el("div", { class: "bubble" }, m.content), edit);
  }
  const node = el("article", { class: "msg msg-assistant", id: `msg-${m.id}`, "aria-label": gettext("Answer"), dataset: { status: m.status } });
  const bubble = el("div", { class: "bubble" });
  node.append(bubble);
  if (IN_FLIGHT.has(m.status)) {
    bubble.append(streamingBody(m));
    node.setAttribute("aria-busy", "true");
  } else if (m.status === "failed") {
    if (m.content) bubble.append(el("div", { class: "section md" }, richText(m.content, citationsOf(m), m.id)));
    bubble.append(errorBox(m));
  } else {
    bubble.append(finalBody(m));
    if (m.metadata && m.metadata.model_unavailable) bubble.append(modelDownRetry());
    node.append(footer(m));
  }
  return node;
}

export function emptyState() {
  const n = shared.attached.length;
  const text = n
    ? count(ngettext("ragsite searches the %(n)s document attached below and answers with numbered sources you can open. Use the paperclip to choose documents.",
      "ragsite searches the %(n)s documents attached below and answers with numbered sources you can open. Use the paperclip to choose documents.", n), n)
    : gettext("ragsite searches all your documents and answers with numbered sources you can open. Use the paperclip to choose documents.");
  return el("div", { class: "thread-empty", id: "thread-empty" }, icon("chat", "icon-lg"),
    el("p", {}, el("strong", {}, gettext("Ask a question"))), el("p", {}, text));
}

function nearBottom() { return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 120; }
export function toBottom() { scroller.scrollTop = scroller.scrollHeight; }

export function upsert(m) {
  // Live events carry no feedback (it is the user's own, from the API): keep what the page knows.
  const known = messages.get(m.id);
  if (m.feedback === undefined && known && known.feedback) m = { ...m, feedback: known.feedback };
  messages.set(m.id, m);
  const stick = nearBottom();
  const fresh = renderMessage(m);
  const existing = document.getElementById(`msg-${m.id}`);
  if (existing && IN_FLIGHT.has(m.status) && existing.dataset.status === m.status) {
    patchLive(existing, m); // the same answer still being written: keep what is already drawn
  } else if (existing) {
    existing.replaceWith(fresh);
  } else {
    const empty = document.getElementById("thread-empty");
    if (empty) empty.remove();
    // Keep the order of ids (messages are created in order).
    const later = [...thread.children].find((n) => n.id && Number(n.id.slice(4)) > m.id);
    thread.insertBefore(fresh, later || null);
  }
  applyVersions();
  if (stick) toBottom();
  if (!panel.hidden && Number(panel.dataset.message) === m.id) showSources(m.id);
}

/** Redraw an answer in flight: its text's blocks that did not change stay the same elements. */
function patchLive(node, m) {
  const body = node.querySelector(".answer-body");
  const fresh = streamingBody(m);
  const section = body && body.querySelector(":scope > .section");
  const freshSection = fresh.querySelector(":scope > .section");
  if (section && freshSection) {
    for (const caret of section.querySelectorAll(".caret")) caret.remove(); // it moves on with the text
    patch(section, freshSection);
  } else if (body) body.replaceWith(fresh);
}

const dirty = new Set();
let frame = 0;
export function renderLive(id) {
  dirty.add(id);
  if (frame) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    const stick = nearBottom();
    for (const mid of dirty) {
      const m = messages.get(mid);
      const node = document.getElementById(`msg-${mid}`);
      if (!m || !node || !IN_FLIGHT.has(m.status)) continue;
      patchLive(node, m);
    }
    dirty.clear();
    if (stick) toBottom();
  });
}
