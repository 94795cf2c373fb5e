/* The chat page's shared state: the data it was rendered with (json_script "chat-data"), its elements,
   and what the page knows of the conversation's messages. The other modules of the page read it and
   change the maps and `shared`; nothing here calls them. */
const rag = window.rag; // app.js, a classic script that runs before any module

export const boot = rag.data("chat-data");
// null until the first question creates the conversation (the page at /c/new/): then adopt() sets it.
export let convId = boot.conversation.id;
export const searchable = boot.searchable_count;
// Replaced as the page learns more: the conversation (title.js) and its attached documents (attachments.js).
export const shared = { conversation: boot.conversation, attached: boot.attached };

export const thread = document.getElementById("thread");
export const scroller = document.getElementById("chat-scroll");
export const composer = document.getElementById("composer");
export const question = document.getElementById("question");
export const sendBtn = document.getElementById("send-btn");
export const chip = document.getElementById("scope-chip");
export const pills = document.getElementById("pills");
export const panel = document.getElementById("sources-panel");
export const panelList = document.getElementById("sources-list");
export const panelTitle = document.getElementById("sources-title");
export const preview = document.getElementById("preview");

export const messages = new Map(); // id -> message (API shape)
export const liveText = new Map(); // id -> text streamed so far (answers in flight)
export const liveSources = new Map(); // id -> {tag: source} from the "sources" event
export const IN_FLIGHT = new Set(["pending", "streaming"]);

/** The user's stored feedback on message `m`: on the whole answer (sourceId null) or on one cited source. */
export function feedbackOf(m, sourceId = null) {
  return ((m && m.feedback) || []).find((f) => (f.source_id || null) === sourceId) || null;
}

/** The conversation the first question just created: the page becomes its page (/c/<id>/). */
export function adopt(conversation) {
  convId = conversation.id;
  shared.conversation = conversation;
  document.getElementById("chat-section").dataset.conversation = String(conversation.id);
  history.replaceState(null, "", `/c/${conversation.id}/`);
  document.dispatchEvent(new CustomEvent("rag:conversation", { detail: { conversation } }));
}
