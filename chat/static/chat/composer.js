/* Asking: the question box grows with its text, Enter sends, and the answer is followed live. */
import { connect, ensureLive } from "./live.js";
import { toBottom, upsert } from "./messages.js";
import { adopt, composer, convId, question, sendBtn, shared } from "./state.js";
import { refreshConversation } from "./title.js";
import { showLatestQuestion } from "./versions.js";

const { api, toast } = window.rag;

function autosize() {
  question.style.height = "auto";
  question.style.height = `${Math.min(question.scrollHeight, 192)}px`;
}
question.addEventListener("input", autosize);
question.addEventListener("input", () => { if (!question.value.trim()) shared.editOf = null; }); // emptied: no longer an edit
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
    // An edited last question (regenerate.js) is sent as a new version of it, unless the box was emptied meanwhile.
    const edit = convId && shared.editOf ? { edit_of: shared.editOf } : {};
    const pair = convId ? await api("POST", `/api/conversations/${convId}/messages/`, { content, ...topic, ...edit }) : await start(content, topic);
    shared.editOf = null;
    question.value = "";
    autosize();
    upsert(pair.user_message);
    upsert(pair.assistant_message);
    if (edit.edit_of) showLatestQuestion(pair.user_message);
    toBottom();
    ensureLive();
    if (!shared.conversation.title) refreshConversation();
    if (pair.id) connect(); // the conversation's own live events, now that it exists
  } catch (err) {
    toast(err.message, "error");
  } finally {
    sendBtn.disabled = false;
    question.focus();
  }
});

/** The first question starts the conversation, with the documents attached and the collection chosen meanwhile. */
async function start(content, topic) {
  const select = document.getElementById("collection-select");
  const body = { question: content, ...topic, document_ids: shared.attached.map((d) => d.id) };
  if (select && select.value) body.collection = select.value;
  const created = await api("POST", "/api/conversations/", body);
  const conversation = { ...created };
  for (const key of ["user_message", "assistant_message", "stream_url", "websocket_url"]) delete conversation[key];
  adopt(conversation);
  return created;
}
