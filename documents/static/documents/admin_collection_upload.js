/* The admin's upload page of a collection (admin/documents/collection/upload.html): several files
   uploaded to the collection through the documents API, each followed until it is indexed or failed. */
(function () {
  "use strict";
  // The admin loads Django's JavaScript catalogue for this page (upload.html): djangojs.po.
  const gettext = window.gettext || ((text) => text);
  const ngettext = window.ngettext || ((one, many, n) => (n === 1 ? one : many));
  const fill = (fmt, values) => fmt.replace(/%\((\w+)\)s/g, (m, key) => String(values[key]));
  // The library page's request: POST /api/documents/ with the collection; progress from the upload itself.
  const collection = JSON.parse(document.getElementById("rs-collection").textContent);
  const maxSize = JSON.parse(document.getElementById("rs-max-size").textContent);
  const csrf = document.querySelector("#rs-upload-form [name=csrfmiddlewaretoken]").value;
  const rows = document.querySelector("#rs-uploads tbody");
  const queue = [];
  let running = 0;

  function row(file) {
    const tr = document.createElement("tr");
    const name = document.createElement("td"), bar = document.createElement("td"), result = document.createElement("td");
    name.textContent = file.name;
    const progress = document.createElement("progress");
    progress.max = 100; progress.value = 0;
    bar.append(progress);
    result.textContent = "waiting";
    tr.append(name, bar, result);
    rows.append(tr);
    return { progress, result };
  }

  function upload(job) {
    running++;
    const xhr = new XMLHttpRequest();
    const form = new FormData();
    form.append("file", job.file, job.file.name);
    form.append("collection", collection);
    xhr.open("POST", "/api/documents/");
    xhr.setRequestHeader("X-CSRFToken", csrf);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable) { job.ui.progress.value = Math.round(100 * e.loaded / e.total); job.ui.result.textContent = "uploading"; }
    });
    xhr.addEventListener("loadend", () => {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch (err) { body = null; }
      job.ui.progress.value = 100;
      if ((xhr.status === 200 || xhr.status === 201) && body && body.id) {
        job.ui.result.textContent = fill(body.duplicate ? gettext("already in the collection (#%(id)s)") : gettext("uploaded, waiting to index (#%(id)s)"), { id: body.id });
        follow(body, job.ui, body.duplicate);
      } else {
        job.ui.result.textContent = (body && body.message) || fill(gettext("failed (the server answered %(status)s)"), { status: xhr.status || gettext("nothing") });
        job.ui.result.className = "errornote";
      }
      running--;
      pump();
    });
    xhr.send(form);
  }

  // After the upload: the document's indexing, until it is indexed or failed (with the reason).
  function follow(doc, ui, duplicate) {
    const prefix = duplicate ? fill(gettext("already in the collection (#%(id)s): "), { id: doc.id }) : `#${doc.id}: `;
    ui.result.dataset.status = doc.status;
    if (doc.status === "indexed") {
      ui.result.textContent = prefix + fill(ngettext("indexed (%(n)s chunk)", "indexed (%(n)s chunks)", doc.chunk_count), { n: doc.chunk_count });
      ui.result.className = "rs-indexed";
      return;
    }
    if (doc.status === "failed") {
      ui.result.textContent = prefix + fill(gettext("failed: %(reason)s"), { reason: doc.index_error || gettext("unknown reason") });
      ui.result.className = "errornote";
      return;
    }
    if (doc.status !== "uploaded") {
      const done = doc.chunks_total ? " " + fill(gettext("%(done)s/%(total)s chunks embedded"), { done: doc.chunks_embedded, total: doc.chunks_total })
        : doc.pages_total ? " " + fill(gettext("%(done)s/%(total)s pages"), { done: doc.pages_done, total: doc.pages_total }) : "";
      ui.result.textContent = `${prefix}${gettext("indexing…")}${done}${doc.progress_note ? ` (${doc.progress_note})` : ""}`;
    }
    setTimeout(async () => {
      try {
        const response = await fetch(`/api/documents/${doc.id}/`, { headers: { Accept: "application/json" }, credentials: "same-origin" });
        if (response.ok) { follow(await response.json(), ui, duplicate); return; }
        ui.result.textContent = prefix + fill(gettext("no longer available (the server answered %(status)s)"), { status: response.status });
      } catch (err) { follow(doc, ui, duplicate); }
    }, 1500);
  }

  function pump() { while (running < 2 && queue.length) upload(queue.shift()); }

  document.getElementById("rs-upload-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = document.getElementById("rs-files");
    for (const file of input.files) {
      const ui = row(file);
      if (file.size > maxSize) { ui.result.textContent = fill(gettext("larger than the limit of %(size)s MB"), { size: Math.round(maxSize / 1048576) }); ui.result.className = "errornote"; continue; }
      queue.push({ file, ui });
    }
    input.value = "";
    pump();
  });
})();
