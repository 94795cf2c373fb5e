/* An answer that waits for a document being indexed: "Wait for it and ask again" follows the
   documents' indexing, then asks again through the retry endpoint. */
import { ensureLive } from "./live.js";
import { upsert } from "./messages.js";
import { convId, liveSources, liveText, messages } from "./state.js";

const rag = window.rag;
const { api, el, icon } = rag;
const waits = new Map(); // id of an answer that waits for a document -> {busy, label, error}

/** Documents the answer waits for that may still become searchable (a failed one will not). */
function waitedFor(m) {
  if (!m.metadata || m.metadata.mode !== "waiting") return [];
  return (m.metadata.waiting_for_documents || []).filter((d) => d.status !== "failed");
}

export function waitBox(m) {
  const docs = waitedFor(m);
  if (!docs.length) return null;
  const state = waits.get(m.id) || {};
  const button = el("button", { type: "button", class: "btn btn-sm", "aria-disabled": state.busy ? "true" : "false" },
    icon("refresh"), "Wait for it and ask again");
  button.addEventListener("click", () => waitAndAskAgain(m.id, docs));
  return el("div", { class: "msg-wait" }, button,
    el("span", { class: "wait-status" + (state.error ? " wait-error" : ""), role: "status" }, state.label || ""));
}

function setWait(id, state) {
  waits.set(id, state);
  const box = document.querySelector(`#msg-${id} .msg-wait`); // updated in place: the button keeps its focus
  if (!box) return;
  box.querySelector("button").setAttribute("aria-disabled", state.busy ? "true" : "false"); // not disabled: focus stays
  const status = box.querySelector(".wait-status");
  status.textContent = state.label || "";
  status.classList.toggle("wait-error", !!state.error);
}

/** Poll the documents until they are searchable, then ask again through the retry endpoint. */
async function waitAndAskAgain(id, docs) {
  if ((waits.get(id) || {}).busy) return;
  setWait(id, { busy: true, label: "Checking…" });
  try {
    for (;;) {
      const fresh = await Promise.all(docs.map((d) => api("GET", `/api/documents/${d.document_id}/`)));
      const failed = fresh.find((d) => d.status === "failed");
      if (failed) {
        setWait(id, { busy: false, error: true, label: `${failed.name} could not be indexed: ${failed.index_error || "unknown reason"}` });
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
    setWait(id, { busy: true, label: "Indexed — asking again…" });
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
