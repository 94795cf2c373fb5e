/* Asking again: Retry on a failed answer, and "Wait for it and ask again" on an answer that waits for a
   document being indexed (it follows the indexing, then asks through the retry endpoint). messages.js
   and waiting.js draw the buttons; their clicks are handled here, on the thread, so that the modules
   import one way (an import cycle would also stop ManifestStaticFilesStorage from hashing them). */
import { ensureLive } from "./live.js";
import { upsert } from "./messages.js";
import { convId, liveSources, liveText, messages, thread } from "./state.js";
import { setWait, waitedFor, waits } from "./waiting.js";

const rag = window.rag;
const { api, toast, gettext, tr } = rag;

async function retry(id, button) {
  button.disabled = true;
  try {
    const fresh = await api("POST", `/api/conversations/${convId}/messages/${id}/retry/`);
    liveText.delete(id);
    liveSources.delete(id);
    upsert(fresh);
    ensureLive();
  } catch (err) {
    button.disabled = false;
    toast(err.message, "error");
  }
}

/** Poll the documents until they are searchable, then ask again through the retry endpoint. */
async function waitAndAskAgain(id, docs) {
  if ((waits.get(id) || {}).busy) return;
  setWait(id, { busy: true, label: gettext("Checking…") });
  try {
    for (;;) {
      const fresh = await Promise.all(docs.map((d) => api("GET", `/api/documents/${d.document_id}/`)));
      const failed = fresh.find((d) => d.status === "failed");
      if (failed) {
        setWait(id, { busy: false, error: true, label: tr(gettext("%(name)s could not be indexed: %(reason)s"), { name: failed.name, reason: failed.index_error || gettext("unknown reason") }) });
        return;
      }
      const pending = fresh.filter((d) => !(d.chunk_count > 0));
      if (!pending.length) break;
      setWait(id, { busy: true, label: `${pending[0].name}: ${rag.docStatus(pending[0]).label}` });
      await new Promise((resolve) => setTimeout(resolve, 2000));
      if (!messages.has(id)) return;
      // The server answers it again by itself once the documents are indexed: stop when it has.
      const current = messages.get(id);
      if (current.status !== "done" || !current.metadata || current.metadata.mode !== "waiting") { waits.delete(id); return; }
    }
    setWait(id, { busy: true, label: gettext("Indexed — asking again…") });
    const answer = await api("POST", `/api/conversations/${convId}/messages/${id}/retry/`);
    waits.delete(id);
    liveText.delete(id);
    liveSources.delete(id);
    upsert(answer);
    ensureLive();
  } catch (err) {
    setWait(id, { busy: false, error: true, label: err.message });
  }
}

thread.addEventListener("click", (e) => {
  const button = e.target.closest(".msg-error > button, .msg-retry > button, .msg-wait > button");
  if (!button) return;
  const id = Number(button.closest(".msg").id.slice(4));
  if (!button.parentElement.classList.contains("msg-wait")) retry(id, button);
  else if (messages.has(id)) waitAndAskAgain(id, waitedFor(messages.get(id)));
});
