/* Asking again. Regenerate the last answer: POST …/regenerate/ queues a new version beside the earlier ones
   (versions.js shows "‹ 2/2 ›"); the new version streams in like any answer. Edit a question: its text goes
   back into the question box; changed and sent, it becomes a new version of that question beside the
   earlier one (versions.js: "‹ 2/2 ›" on the question), and the conversation goes on from there. */
import { ensureLive } from "./live.js";
import { toBottom, upsert } from "./messages.js";
import { convId, messages, question, shared, thread } from "./state.js";
import { showLatest } from "./versions.js";

const { api, toast } = window.rag;

thread.addEventListener("click", (e) => {
  const button = e.target instanceof Element && e.target.closest(".edit-btn");
  if (!button) return;
  const asked = messages.get(Number(button.dataset.message));
  if (!asked) return;
  shared.editOf = asked.id; // composer.js sends it as `edit_of`: a new version of that question, branching there
  question.value = asked.content;
  question.dispatchEvent(new Event("input")); // the box grows to its text
  question.focus();
  question.setSelectionRange(question.value.length, question.value.length);
});

thread.addEventListener("click", async (e) => {
  const button = e.target instanceof Element && e.target.closest(".regen-btn");
  if (!button || button.disabled) return;
  button.disabled = true;
  try {
    const fresh = await api("POST", `/api/conversations/${convId}/messages/${button.dataset.message}/regenerate/`);
    upsert(fresh);
    showLatest(fresh);
    toBottom();
    ensureLive();
  } catch (err) {
    toast(err.message, "error");
    button.disabled = false;
  }
});
