/* The chat page: history, live answers (WebSocket, SSE as fallback), citations, sources, attachments.
   ES modules without a build step, loaded by chat.html with <script type="module">; app.js (window.rag)
   and topics.js (window.ragTopic) are classic scripts that run before them. The modules import one
   way, never in a cycle (ManifestStaticFilesStorage could not hash a cycle): state; citations, waiting
   and title on it; markdown (with the vendored marked and DOMPurify) under citations and sources;
   sources; messages; live and attachments; versions under messages; actions, regenerate, retry, feedback, composer, drop, stop and the sidebar; this one. Each wires
   its own controls when first imported; this one draws the page and starts following answers. */
import "./actions.js";
import { renderScope } from "./attachments.js";
import "./composer.js";
import "./drop.js";
import "./feedback.js";
import { connect, ensureLive } from "./live.js";
import { emptyState, renderMessage, toBottom } from "./messages.js";
import "./regenerate.js";
import "./retry.js";
import "./sidebar.js";
import "./sources.js";
import "./stop.js";
import { boot, convId, IN_FLIGHT, liveText, messages, question, thread } from "./state.js";
import { showTitle } from "./title.js";
import { applyVersions } from "./versions.js";

for (const m of boot.messages) {
  messages.set(m.id, m);
  if (IN_FLIGHT.has(m.status)) liveText.set(m.id, m.content || "");
}
showTitle();
renderScope();
thread.replaceChildren();
if (!boot.messages.length) thread.append(emptyState());
for (const m of boot.messages) thread.append(renderMessage(m));
applyVersions();
toBottom();
if (convId) connect(); // else the first question creates the conversation, then composer.js connects
setTimeout(ensureLive, 3000); // no WebSocket by then: follow answers over SSE
if (window.matchMedia("(pointer: fine)").matches) question.focus(); // no keyboard popping up on phones
