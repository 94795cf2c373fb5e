/* An answer that waits for a document being indexed: its "Wait for it and ask again" box, and the box's
   state while retry.js follows the documents' indexing. */
const { el, icon, gettext } = window.rag;
export const waits = new Map(); // id of an answer that waits for a document -> {busy, label, error}

/** Documents the answer waits for that may still become searchable (a failed one will not). */
export function waitedFor(m) {
  if (!m.metadata || m.metadata.mode !== "waiting") return [];
  return (m.metadata.waiting_for_documents || []).filter((d) => d.status !== "failed");
}

export function waitBox(m) {
  const docs = waitedFor(m);
  if (!docs.length) return null;
  const state = waits.get(m.id) || {};
  const button = el("button", { type: "button", class: "btn btn-sm", "aria-disabled": state.busy ? "true" : "false" },
    icon("refresh"), gettext("Wait for it and ask again"));
  return el("div", { class: "msg-wait" }, button,
    el("span", { class: "wait-status" + (state.error ? " wait-error" : ""), role: "status" }, state.label || ""));
}

export function setWait(id, state) {
  waits.set(id, state);
  const box = document.querySelector(`#msg-${id} .msg-wait`); // updated in place: the button keeps its focus
  if (!box) return;
  box.querySelector("button").setAttribute("aria-disabled", state.busy ? "true" : "false"); // not disabled: focus stays
  const status = box.querySelector(".wait-status");
  status.textContent = state.label || "";
  status.classList.toggle("wait-error", !!state.error);
}
