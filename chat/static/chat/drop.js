/* Drag and drop files onto the conversation: each is uploaded to the library (POST /api/documents/, the
   library's own path) with its progress shown inline among the attached documents, then attached to the
   conversation (before its first question: attached when the question creates it). A question asked
   meanwhile waits for the document to be indexed, as for any attached document. */
import { renderScope } from "./attachments.js";
import { boot, convId, pills, shared } from "./state.js";

const { api, el, icon, csrfToken } = window.rag;
const gettext = window.gettext || ((text) => text);
const fill = (text, values) => text.replace(/%\((\w+)\)s/g, (_, key) => String(values[key]));

const section = document.getElementById("chat-section");
const overlay = el("div", { class: "drop-overlay", "aria-hidden": "true" },
  icon("upload"), el("span", {}, gettext("Drop files to upload them and attach them to this conversation")));
section.append(overlay);

function hasFiles(e) { return e.dataTransfer && [...e.dataTransfer.types].includes("Files"); }
let depth = 0;
section.addEventListener("dragenter", (e) => { if (!hasFiles(e)) return; e.preventDefault(); depth++; section.classList.add("is-dropping"); });
section.addEventListener("dragover", (e) => { if (!hasFiles(e)) return; e.preventDefault(); e.dataTransfer.dropEffect = "copy"; });
section.addEventListener("dragleave", (e) => { if (!hasFiles(e)) return; depth = Math.max(0, depth - 1); if (!depth) section.classList.remove("is-dropping"); });
section.addEventListener("drop", (e) => {
  if (!hasFiles(e)) return;
  e.preventDefault();
  depth = 0;
  section.classList.remove("is-dropping");
  for (const file of e.dataTransfer.files) uploadAndAttach(file);
});

/** One file: an inline row with its progress, then the attached document's pill in its place. */
export async function uploadAndAttach(file) {
  const bar = el("progress", { max: "100", value: "0", "aria-label": fill(gettext("Uploading %(name)s"), { name: file.name }) });
  const label = el("span", { class: "upload-pct" }, "0 %");
  const row = el("li", { class: "pill pill-upload", role: "status" }, el("span", { class: "pill-name", title: file.name }, file.name), bar, label);
  uploads().append(row); // beside the pills (which renderScope redraws), until attached
  const [status, body] = await post(file, (fraction) => { bar.value = Math.round(fraction * 100); label.textContent = `${bar.value} %`; });
  if ((status === 200 || status === 201) && body && body.id) {
    document.dispatchEvent(new CustomEvent("rag:document-uploaded", { detail: body })); // notify.js tells when it is ready
    try {
      await attach(body);
      row.remove();
      return;
    } catch (err) {
      return failed(row, err.message);
    }
  }
  failed(row, (body && body.message) || (status === 0 ? gettext("The upload was interrupted. Check your connection and try again.")
    : fill(gettext("Upload failed (the server answered %(status)s)."), { status })));
}

function uploads() {
  let list = document.getElementById("drop-uploads");
  if (!list) {
    list = el("ul", { class: "pills drop-uploads", id: "drop-uploads", "aria-label": gettext("Uploads") });
    pills.after(list);
  }
  return list;
}

function failed(row, message) {
  const close = el("button", { type: "button", "aria-label": gettext("Dismiss"), title: gettext("Dismiss") }, icon("x"));
  close.addEventListener("click", () => row.remove());
  row.classList.add("is-failed");
  row.setAttribute("role", "alert");
  row.replaceChildren(el("span", { class: "pill-name" }, row.querySelector(".pill-name").textContent), el("span", {}, message), close);
}

async function attach(doc) {
  if (convId) {
    await api("POST", `/api/conversations/${convId}/documents/`, { document_id: doc.id });
    shared.attached = await api("GET", `/api/conversations/${convId}/documents/`);
  } else if (!shared.attached.some((d) => d.id === doc.id)) { // the first question attaches it (composer.js)
    shared.attached = [...shared.attached, { id: doc.id, title: doc.title, name: doc.name, status: doc.status,
      chunk_count: doc.chunk_count, index_error: doc.index_error || "" }];
  }
  renderScope();
}

/** Upload the file with progress: a big one straight to the bucket when the site has object storage
    (as the library page does), else through ragsite; [HTTP status (0: no answer), parsed JSON body or null]. */
async function post(file, progress) {
  const big = boot.direct_upload_min_size;
  if (big !== null && big !== undefined && file.size >= big) {
    const direct = await postDirect(file, progress);
    if (direct) return direct;
  }
  const form = new FormData();
  form.append("file", file, file.name);
  return send("/api/documents/", form, progress, { "X-CSRFToken": csrfToken(), Accept: "application/json" });
}

// Ask for a signed form, post the file to the bucket, then finalize; null when the server has no
// object storage after all (the normal upload is used).
async function postDirect(file, progress) {
  const [offerStatus, signed] = await jsonPost("/api/documents/upload-url/", { name: file.name, size: file.size,
    content_type: file.type || "application/octet-stream" });
  if (offerStatus === 400 && signed && signed.code === "object_storage_unavailable") return null;
  if (offerStatus !== 201) return [offerStatus, signed];
  const form = new FormData();
  for (const [name, value] of Object.entries(signed.fields)) form.append(name, value);
  form.append("file", file, file.name);
  const [sent] = await send(signed.url, form, progress, {});
  if (sent < 200 || sent >= 300) {
    return [sent, { message: fill(gettext("The storage refused the file (it answered %(status)s)."), { status: sent }) }];
  }
  return jsonPost("/api/documents/finalize/", { upload_id: signed.upload_id });
}

async function jsonPost(url, payload) {
  try {
    const response = await fetch(url, { method: "POST", credentials: "same-origin", body: JSON.stringify(payload),
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() } });
    let body = null;
    try { body = await response.json(); } catch (err) { body = null; }
    return [response.status, body];
  } catch (err) {
    return [0, null];
  }
}

/** POST a form with upload progress; [HTTP status (0: no answer), parsed JSON body or null]. */
function send(url, form, progress, headers) {
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", url);
    for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value);
    xhr.upload.addEventListener("progress", (e) => { if (e.lengthComputable) progress(e.loaded / e.total); });
    xhr.addEventListener("load", () => {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch (err) { body = null; }
      resolve([xhr.status, body]);
    });
    xhr.addEventListener("error", () => resolve([0, null]));
    xhr.send(form);
  });
}
