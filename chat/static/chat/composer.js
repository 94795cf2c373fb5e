/* Asking: the question box grows with its text, Enter sends, and the answer is followed live. */
import { ensureLive } from "./live.js";
import { toBottom, upsert } from "./messages.js";
import { composer, convId, question, sendBtn, shared } from "./state.js";
import { refreshConversation } from "./title.js";

const { api, toast } = window.rag;

function autosize() {
  question.style.height = "auto";
  question.style.height = `${Math.min(question.scrollHeight, 192)}px`;
}
question.addEventListener("input", autosize);
question.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); composer.requestSubmit(); }
});

composer.addEventListener("submit", async (e) => {
  e.preventDefault();
  const content = question.value.trim();
  if (!content || sendBtn.disabled) { question.focus(); return; }
  sendBtn.disabled = true;
  try {
    // The topic picker's current topic (topics.js), so the tiers run under what the reader sees.
    const topic = window.ragTopic ? window.ragTopic.current() : {};
    const pair = await api("POST", `/api/conversations/${convId}/messages/`, { content, ...topic });
    question.value = "";
    autosize();
    upsert(pair.user_message);
    upsert(pair.assistant_message);
    toBottom();
    ensureLive();
    if (!shared.conversation.title) refreshConversation();
  } catch (err) {
    toast(err.message, "error");
  } finally {
    sendBtn.disabled = false;
    question.focus();
  }
});
