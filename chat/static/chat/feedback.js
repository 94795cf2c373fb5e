/* Feedback on answers: 👍 / 👎 in the action row under an answer and a small 👎 on each cited source in
   the sources panel (messages.js and sources.js draw them, pressed as the stored feedback says). After
   👎 on an answer, a small inline form asks why (a reason, an optional comment, and whether to share
   the question with the curators). Pressing a pressed
   button again withdraws the rating. The clicks are handled here, for the whole thread and the panel. */
import { upsert } from "./messages.js";
import { convId, feedbackOf, messages, panelList, thread } from "./state.js";

const { api, el, toast } = window.rag;
const gettext = window.gettext || ((text) => text);

const REASONS = [
  ["wrong", gettext("Wrong")],
  ["outdated", gettext("Outdated")],
  ["incomplete", gettext("Incomplete")],
  ["wrong_source", gettext("Wrong source")],
  ["other", gettext("Other")],
];

const url = (id) => `/api/conversations/${convId}/messages/${id}/feedback/`;

function store(m, sourceId, feedback) {
  const others = (m.feedback || []).filter((f) => (f.source_id || null) !== sourceId);
  upsert({ ...m, feedback: feedback ? [...others, feedback] : others });
}

async function give(m, body) {
  const sourceId = body.source_id || null;
  const feedback = await api("POST", url(m.id), body);
  store(messages.get(m.id) || m, sourceId, feedback);
  return feedback;
}

async function withdraw(m, sourceId) {
  const query = sourceId ? `?source_id=${encodeURIComponent(sourceId)}` : "";
  try {
    await api("DELETE", url(m.id) + query);
  } catch (err) {
    if (err.status !== 404) throw err; // already gone: withdrawn all the same
  }
  store(messages.get(m.id) || m, sourceId, null);
}

function focusAgain(selector) {
  const again = document.querySelector(selector);
  if (again) again.focus();
}

function reasonForm(m) {
  const current = feedbackOf(m) || {};
  const select = el("select", { name: "reason", "aria-label": gettext("Why was it not helpful?") },
    el("option", { value: "" }, gettext("Why was it not helpful?")),
    ...REASONS.map(([value, label]) => el("option", { value }, label)));
  select.value = current.reason || "";
  const comment = el("textarea", { name: "comment", rows: "2", maxlength: "2000",
    "aria-label": gettext("Comment (optional)"), placeholder: gettext("Comment (optional)") });
  comment.value = current.comment || "";
  // Shown to the curators' gap inbox with its reason and comment; the choice is remembered (the server
  // gives a new 👎 the user's last choice, so the box starts as they left it).
  const share = el("input", { type: "checkbox", name: "shared", class: "feedback-share-box" });
  share.checked = Boolean(current.shared);
  const shareLabel = el("label", { class: "feedback-share" }, share, " ",
    gettext("Share this question with the curators"));
  const form = el("form", { class: "feedback-form", dataset: { message: m.id }, "aria-label": gettext("Feedback") },
    select, comment, shareLabel,
    el("div", { class: "feedback-form-buttons" },
      el("button", { type: "submit", class: "btn btn-sm btn-primary" }, gettext("Send")),
      el("button", { type: "button", class: "btn btn-sm btn-ghost feedback-cancel" }, gettext("Close"))));
  return form;
}

function openForm(id) {
  const node = document.getElementById(`msg-${id}`);
  const m = messages.get(id);
  if (!node || !m) return;
  const old = node.querySelector(".feedback-form");
  if (old) old.remove();
  const form = reasonForm(m);
  node.append(form);
  form.querySelector("select").focus();
}

thread.addEventListener("click", async (e) => {
  const button = e.target.closest(".feedback-btn");
  if (!button) return;
  const id = Number(button.dataset.message);
  const m = messages.get(id);
  if (!m) return;
  const rating = button.dataset.rating;
  const selector = `#msg-${id} .feedback-btn[data-rating="${rating}"]`;
  button.disabled = true;
  try {
    const stored = feedbackOf(m);
    if (stored && stored.rating === rating) {
      await withdraw(m, null);
      toast(gettext("Feedback withdrawn."));
      focusAgain(selector);
      return;
    }
    await give(m, { rating });
    if (rating === "down") openForm(id);
    else {
      toast(gettext("Thank you for your feedback."));
      focusAgain(selector);
    }
  } catch (err) {
    button.disabled = false;
    toast(err.message, "error");
  }
});

thread.addEventListener("submit", async (e) => {
  const form = e.target.closest(".feedback-form");
  if (!form) return;
  e.preventDefault();
  const id = Number(form.dataset.message);
  const m = messages.get(id);
  if (!m) return;
  const reason = form.elements.reason.value;
  const comment = form.elements.comment.value;
  const shared = form.elements.shared.checked;
  for (const control of form.elements) control.disabled = true;
  try {
    await give(m, { rating: "down", reason, comment, shared });
    toast(gettext("Thank you for your feedback."));
    focusAgain(`#msg-${id} .feedback-btn[data-rating="down"]`);
  } catch (err) {
    for (const control of form.elements) control.disabled = false;
    toast(err.message, "error");
  }
});

thread.addEventListener("click", (e) => {
  const cancel = e.target.closest(".feedback-cancel");
  if (!cancel) return;
  const form = cancel.closest(".feedback-form");
  const id = form.dataset.message;
  form.remove();
  focusAgain(`#msg-${id} .feedback-btn[data-rating="down"]`);
});

thread.addEventListener("keydown", (e) => {
  const form = e.target.closest(".feedback-form");
  if (!form || e.key !== "Escape") return;
  e.stopPropagation();
  form.querySelector(".feedback-cancel").click();
});

// A cited source's own 👎 in the sources panel: press to rate the source down, again to withdraw.
panelList.addEventListener("click", async (e) => {
  const button = e.target.closest(".source-feedback-btn");
  if (!button) return;
  e.preventDefault();
  const id = Number(button.dataset.message);
  const sourceId = button.dataset.source;
  const m = messages.get(id);
  if (!m) return;
  button.disabled = true;
  try {
    if (feedbackOf(m, sourceId)) {
      await withdraw(m, sourceId);
      toast(gettext("Feedback withdrawn."));
    } else {
      await give(m, { rating: "down", reason: "wrong_source", source_id: sourceId });
      toast(gettext("Thank you: this source is marked as not helpful."));
    }
    focusAgain(`.source-feedback-btn[data-source="${sourceId}"]`);
  } catch (err) {
    button.disabled = false;
    toast(err.message, "error");
  }
});
