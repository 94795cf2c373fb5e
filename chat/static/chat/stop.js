/* Stop while an answer is being written: the Stop button beside Send (shown only then) and Esc when no
   dialog, panel or preview is open. POST …/stop/: a queued answer ends at once; one being written ends
   between two streamed chunks, keeping its text, and arrives over the live events marked stopped. */
import { upsert } from "./messages.js";
import { convId, IN_FLIGHT, liveSources, liveText, messages, panel, preview, sendBtn } from "./state.js";

const { api, toast } = window.rag;
const gettext = window.gettext || ((text) => text);
const stopBtn = document.getElementById("stop-btn");

/** The answer being written (or waiting to be), newest first; null when none. */
function inFlight() {
  let found = null;
  for (const m of messages.values()) if (m.role === "assistant" && IN_FLIGHT.has(m.status)) found = m;
  return found;
}

function refresh() {
  const busy = !!inFlight();
  if (stopBtn.hidden === !busy) return;
  const hadFocus = document.activeElement === stopBtn;
  stopBtn.hidden = !busy;
  sendBtn.hidden = busy;
  if (hadFocus && !busy) document.getElementById("question").focus();
}
setInterval(refresh, 250);

export async function stopAnswer() {
  const m = inFlight();
  if (!m || stopBtn.disabled) return;
  stopBtn.disabled = true;
  try {
    const fresh = await api("POST", `/api/conversations/${convId}/messages/${m.id}/stop/`);
    if (!IN_FLIGHT.has(fresh.status)) { liveText.delete(fresh.id); liveSources.delete(fresh.id); upsert(fresh); }
    toast(gettext("Stopped."));
  } catch (err) {
    toast(err.message, "error");
  } finally {
    stopBtn.disabled = false;
  }
}

stopBtn.addEventListener("click", stopAnswer);
// Capture: decided before the sources panel or a preview closes on the same Esc.
document.addEventListener("keydown", (e) => {
  if (e.key !== "Escape" || !inFlight()) return;
  if (document.querySelector("dialog[open]") || !panel.hidden || !preview.hidden) return;
  if (e.target instanceof Element && e.target.closest("#sidebar, .feedback-form, #chat-head form")) return;
  e.preventDefault();
  stopAnswer();
}, true);
