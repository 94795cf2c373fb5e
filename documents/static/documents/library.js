/* The library page: live document statuses, drag-and-drop uploads with progress, delete and re-index. */
(function () {
  "use strict";
  const { api, el, toast, confirmDialog, formatBytes, timeAgo, fileKind, isFinal, docStatus, badge, progressBar, count, gettext, ngettext, tr } = window.rag;

  const initial = rag.data("library-data");
  const list = document.getElementById("doc-list");
  const emptyBox = document.getElementById("lib-empty");
  const noMatch = document.getElementById("lib-nomatch");
  const countLabel = document.getElementById("lib-count");
  const toolbar = document.getElementById("lib-toolbar");
  const filterInput = document.getElementById("lib-filter");
  const moreBox = document.getElementById("lib-more");
  const announcer = document.getElementById("lib-announce");
  const POLL_MS = 1500;
  const HIDDEN_POLL_MS = 6000;

  const docs = new Map(); // id -> document (API shape)
  const rows = new Map(); // id -> {li, statusKey, actionsKey}
  const deleted = new Set(); // ids deleted on this page: a refresh the server answered before the delete does not bring them back
  let total = initial.total;
  let nextPage = initial.documents.length < initial.total ? 2 : null;
  let pollTimer = null;

  // --- rendering ---------------------------------------------------------------------------

  function sortedIds() {
    return [...docs.values()].sort((a, b) => (b.created_at || "").localeCompare(a.created_at || "") || b.id - a.id).map((d) => d.id);
  }

  function metaLine(doc) {
    const parts = [];
    if (doc.title && doc.name && doc.title !== doc.name) parts.push(doc.name);
    parts.push(formatBytes(doc.size));
    if (doc.pages_total) parts.push(count(ngettext("%(n)s page", "%(n)s pages", doc.pages_total), doc.pages_total));
    parts.push(tr(gettext("added %(when)s"), { when: timeAgo(doc.created_at) }));
    return parts.join(" · ");
  }

  function statusBlock(doc) {
    const s = docStatus(doc);
    const box = el("div", { class: "doc-status" }, badge(doc));
    if (s.kind === "busy") box.append(progressBar(s.progress, tr(gettext("Indexing %(title)s"), { title: doc.title })));
    for (const line of s.details) box.append(el("div", { class: "detail" + (s.kind === "err" ? " err" : "") }, line));
    return box;
  }

  function actionsFor(doc) {
    const box = el("div", { class: "doc-actions" });
    if (doc.status === "failed") {
      box.append(el("button", { type: "button", class: "btn btn-sm btn-primary", onclick: () => reindex(doc, false),
        "aria-label": tr(gettext("Retry indexing %(title)s"), { title: doc.title }) }, gettext("Retry")));
    }
    if (doc.chunk_count > 0) {
      box.append(el("form", { method: "post", action: "/c/new/", class: "inline-form" },
        el("input", { type: "hidden", name: "csrfmiddlewaretoken", value: rag.csrfToken() }),
        el("input", { type: "hidden", name: "document_id", value: doc.id }),
        el("button", { type: "submit", class: "btn btn-sm btn-ghost", "aria-label": tr(gettext("Ask about %(title)s"), { title: doc.title }) }, rag.icon("chat"), gettext("Ask"))));
    }
    box.append(el("a", { class: "btn btn-sm btn-ghost", href: `/documents/${doc.id}/download/`, "aria-label": tr(gettext("Download %(title)s"), { title: doc.title }) }, gettext("Download")));
    box.append(el("button", { type: "button", class: "btn btn-sm btn-danger", onclick: () => remove(doc),
      "aria-label": tr(gettext("Delete %(title)s"), { title: doc.title }) }, gettext("Delete")));
    // Out of the everyday actions: re-index and a new version, behind "⋯".
    const more = [];
    if (doc.status === "indexed") {
      more.push(el("button", { type: "button", class: "btn btn-sm btn-ghost", onclick: () => reindex(doc, true),
        "aria-label": tr(gettext("Re-index %(title)s"), { title: doc.title }) }, gettext("Re-index")));
    }
    if (doc.status === "indexed" || doc.status === "failed") {
      more.push(el("button", { type: "button", class: "btn btn-sm btn-ghost", onclick: () => uploadVersion(doc),
        "aria-label": tr(gettext("Upload new version of %(title)s"), { title: doc.title }) }, gettext("Upload new version")));
    }
    if (more.length) {
      box.append(el("details", { class: "row-menu" },
        el("summary", { class: "btn btn-sm btn-ghost", "aria-label": tr(gettext("More actions for %(title)s"), { title: doc.title }) }, "⋯"),
        el("div", { class: "row-menu-items" }, ...more)));
    }
    return box;
  }

  function buildRow(doc) {
    const kind = fileKind(doc);
    const li = el("li", { class: "doc", id: `doc-${doc.id}`, dataset: { id: doc.id } },
      el("div", { class: "doc-icon " + kind, "aria-hidden": "true" }, kind.toUpperCase()),
      el("div", { class: "doc-main" },
        el("div", { class: "doc-title" }, el("a", { href: `/documents/${doc.id}/` }, doc.title || doc.name)),
        el("div", { class: "doc-meta" }, metaLine(doc)),
        statusBlock(doc)),
      actionsFor(doc));
    return li;
  }

  function statusKey(doc) {
    return JSON.stringify([doc.status, doc.pages_done, doc.pages_total, doc.chunks_embedded, doc.chunks_total, doc.chunk_count,
      doc.index_error, doc.index_warnings, doc.empty_pages, doc.title]);
  }

  function actionsKey(doc) { return `${doc.status === "failed" || doc.status === "indexed" ? doc.status : "busy"}:${doc.chunk_count > 0}`; }

  function updateRow(doc) {
    let row = rows.get(doc.id);
    if (!row) {
      row = { li: buildRow(doc), statusKey: statusKey(doc), actionsKey: actionsKey(doc) };
      rows.set(doc.id, row);
      return row;
    }
    row.li.dataset.status = doc.status;
    const sk = statusKey(doc);
    if (sk !== row.statusKey) {
      row.li.querySelector(".doc-status").replaceWith(statusBlock(doc));
      row.li.querySelector(".doc-meta").textContent = metaLine(doc);
      // The title extraction found replaces the file name at once (and stays: the API returns it from then on).
      row.li.querySelector(".doc-title a").textContent = doc.title || doc.name;
      row.statusKey = sk;
    }
    const ak = actionsKey(doc);
    if (ak !== row.actionsKey) {
      const hadFocus = row.li.querySelector(".doc-actions").contains(document.activeElement);
      const fresh = actionsFor(doc);
      row.li.querySelector(".doc-actions").replaceWith(fresh);
      if (hadFocus) fresh.querySelector("a,button").focus();
      row.actionsKey = ak;
    }
    return row;
  }

  function render() {
    const ids = sortedIds();
    const query = filterInput.value.trim().toLowerCase();
    let shown = 0;
    let previous = null;
    for (const id of ids) {
      const doc = docs.get(id);
      const row = updateRow(doc);
      const match = !query || `${doc.title} ${doc.name}`.toLowerCase().includes(query);
      row.li.hidden = !match;
      if (match) shown++;
      // Keep DOM order = newest first without re-inserting rows that are already in place.
      const expected = previous ? previous.nextSibling : list.firstChild;
      if (expected !== row.li) list.insertBefore(row.li, expected);
      previous = row.li;
    }
    for (const [id, row] of rows) {
      if (!docs.has(id)) { row.li.remove(); rows.delete(id); }
    }
    const n = docs.size;
    emptyBox.hidden = n > 0;
    list.hidden = n === 0;
    toolbar.hidden = n < 2;
    noMatch.hidden = !(n > 0 && shown === 0);
    moreBox.hidden = !nextPage;
    const pending = [...docs.values()].filter((d) => !isFinal(d)).length;
    countLabel.textContent = n ? `${count(ngettext("%(n)s document", "%(n)s documents", Math.max(total, n)), Math.max(total, n))}${pending ? ` · ${count(ngettext("%(n)s indexing", "%(n)s indexing", pending), pending)}` : ""}` : "";
    schedulePoll();
  }

  function flashRow(id) {
    const row = rows.get(id);
    if (!row) return;
    row.li.hidden = false;
    row.li.scrollIntoView({ block: "nearest", behavior: "smooth" });
    row.li.classList.remove("flash-row");
    void row.li.offsetWidth;
    row.li.classList.add("flash-row");
  }

  // --- live updates --------------------------------------------------------------------------

  function setDoc(doc) {
    const before = docs.get(doc.id);
    docs.set(doc.id, doc);
    if (before && !isFinal(before) && isFinal(doc)) {
      const s = docStatus(doc);
      announcer.textContent = `${doc.title}: ${s.label}`;
    }
  }

  function schedulePoll() {
    const pending = [...docs.values()].some((d) => !isFinal(d));
    if (!pending) { clearTimeout(pollTimer); pollTimer = null; return; }
    if (pollTimer) return;
    pollTimer = setTimeout(poll, document.hidden ? HIDDEN_POLL_MS : POLL_MS);
  }

  async function poll() {
    const waiting = new Set([...docs.values()].filter((d) => !isFinal(d)).map((d) => d.id));
    try {
      const page = await api("GET", "/api/documents/?collection=own&status=uploaded,processing,reindexing&page_size=200");
      for (const doc of page.results) {
        if (deleted.has(doc.id)) continue;
        if (!docs.has(doc.id)) total++;
        setDoc(doc);
        waiting.delete(doc.id);
      }
      // The rest finished (or were deleted elsewhere): fetch each once.
      await Promise.all([...waiting].map(async (id) => {
        try {
          const doc = await api("GET", `/api/documents/${id}/`);
          if (!deleted.has(id)) setDoc(doc);
        } catch (err) {
          if (err.status === 404 && docs.delete(id)) total = Math.max(0, total - 1);
        }
      }));
    } catch (err) {
      if (err.status === 401 || err.status === 403) { toast(err.message, "error"); pollTimer = null; return; }
    }
    pollTimer = null;
    render();
  }

  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && pollTimer) { clearTimeout(pollTimer); pollTimer = null; poll(); }
  });

  // --- actions -------------------------------------------------------------------------------

  async function reindex(doc, confirmFirst) {
    if (confirmFirst) {
      const ok = await confirmDialog({ title: tr(gettext("Re-index “%(title)s”?"), { title: doc.title }),
        message: gettext("ragsite reads the file again and rebuilds its index. The current version keeps answering until the new one is ready."),
        confirm: gettext("Re-index") });
      if (!ok) return;
    }
    try {
      setDoc(await api("POST", `/api/documents/${doc.id}/reindex/`));
      render();
      toast(tr(confirmFirst ? gettext("Re-indexing %(title)s") : gettext("Indexing %(title)s again"), { title: doc.title }));
    } catch (err) {
      toast(err.message, "error");
    }
  }

  // A new file for the same document: the current version answers until the new one is indexed.
  function uploadVersion(doc) {
    const picker = el("input", { type: "file", hidden: true, accept: initial.upload_accept || "" });
    picker.addEventListener("change", async () => {
      const file = picker.files[0];
      picker.remove();
      if (!file) return;
      const form = new FormData();
      form.append("file", file);
      try {
        const response = await fetch(`/api/documents/${doc.id}/versions/`, { method: "POST", body: form,
          credentials: "same-origin", headers: { Accept: "application/json", "X-CSRFToken": rag.csrfToken() } });
        const body = await response.json().catch(() => ({}));
        if (!response.ok) throw new Error(body.message || gettext("The upload failed."));
        setDoc(await api("GET", `/api/documents/${doc.id}/`));
        render();
        toast(tr(gettext("Version %(number)s of %(title)s is being indexed; version %(current)s answers meanwhile."), { number: body.number, title: doc.title, current: doc.version || 1 }));
      } catch (err) {
        toast(err.message, "error");
      }
    });
    document.body.append(picker);
    picker.click();
  }

  async function remove(doc) {
    const ok = await confirmDialog({ title: tr(gettext("Delete “%(title)s”?"), { title: doc.title }),
      message: gettext("The file, its text and its index are removed; conversations can no longer search or cite it. This cannot be undone."),
      confirm: gettext("Delete"), danger: true });
    if (!ok) return;
    try {
      await api("DELETE", `/api/documents/${doc.id}/`);
    } catch (err) {
      if (err.status !== 404) { toast(err.message, "error"); return; }
    }
    const ids = sortedIds();
    const next = ids[ids.indexOf(doc.id) + 1] || ids[ids.indexOf(doc.id) - 1];
    deleted.add(doc.id);
    docs.delete(doc.id);
    total = Math.max(0, total - 1);
    render();
    toast(tr(gettext("Deleted %(title)s"), { title: doc.title }));
    const focusTarget = next && rows.get(next) ? rows.get(next).li.querySelector(".doc-title a") : document.getElementById("choose-files");
    if (focusTarget) focusTarget.focus();
  }

  moreBox.querySelector("button").addEventListener("click", async (event) => {
    const button = event.currentTarget;
    button.disabled = true;
    try {
      const page = await api("GET", `/api/documents/?collection=own&page=${nextPage}&page_size=${initial.page_size}`);
      for (const doc of page.results) if (!docs.has(doc.id) && !deleted.has(doc.id)) docs.set(doc.id, doc);
      nextPage = page.next ? nextPage + 1 : null;
      total = page.count;
      render();
    } catch (err) {
      toast(err.message, "error");
    } finally {
      button.disabled = false;
    }
  });

  filterInput.addEventListener("input", render);

  // --- uploads -------------------------------------------------------------------------------

  const uploadsBox = document.getElementById("uploads");
  const fileInput = document.getElementById("file-input");
  const dropzone = document.getElementById("dropzone");
  const queue = [];
  let running = 0;
  const PARALLEL = 2;

  function uploadRow(file) {
    const state = el("span", { class: "upload-state" }, gettext("Waiting…"));
    const bar = progressBar(0, tr(gettext("Uploading %(name)s"), { name: file.name }));
    const dismiss = el("button", { type: "button", class: "btn btn-ghost btn-icon btn-sm", "aria-label": tr(gettext("Dismiss %(name)s"), { name: file.name }), hidden: true }, rag.icon("x"));
    const li = el("li", { class: "upload" },
      el("span", { class: "upload-name", title: file.name }, file.name, el("span", { class: "muted small" }, ` · ${formatBytes(file.size)}`)),
      el("span", { class: "btn-row" }, state, dismiss), bar);
    dismiss.addEventListener("click", () => { li.remove(); uploadsBox.hidden = !uploadsBox.children.length; });
    uploadsBox.prepend(li);
    uploadsBox.hidden = false;
    return {
      li,
      progress(fraction) {
        bar.firstChild.style.width = `${Math.round(fraction * 100)}%`;
        bar.setAttribute("aria-valuenow", String(Math.round(fraction * 100)));
        state.textContent = fraction < 1 ? tr(gettext("Uploading… %(percent)s %"), { percent: Math.round(fraction * 100) }) : gettext("Checking…");
      },
      finish(kind, message, extra) {
        bar.remove();
        li.classList.add(kind === "error" ? "is-error" : kind === "dup" ? "is-dup" : "is-done");
        state.textContent = message;
        if (extra) li.append(extra);
        dismiss.hidden = false;
        if (kind === "done") setTimeout(() => { li.remove(); uploadsBox.hidden = !uploadsBox.children.length; }, 6000);
      },
    };
  }

  function addFiles(files, collection) {
    for (const file of files) {
      const row = uploadRow(file);
      if (file.size > initial.max_upload_size) {
        row.finish("error", gettext("Too large"), el("span", { class: "upload-msg" },
          tr(gettext("This file is %(size)s; the largest file ragsite accepts is %(limit)s."), { size: formatBytes(file.size), limit: formatBytes(initial.max_upload_size) })));
        continue;
      }
      queue.push({ file, row, collection });
    }
    pump();
  }

  function pump() {
    while (running < PARALLEL && queue.length) {
      const job = queue.shift();
      running++;
      upload(job).finally(() => { running--; pump(); });
    }
  }

  // A curator's upload into a collection: the same request with `collection`; the row goes to its section.
  function addShared(slug, doc) {
    const section = document.querySelector(`[data-collection-list="${slug}"]`);
    if (!section || section.querySelector(`[data-doc-id="${doc.id}"]`)) return;
    const li = el("li", { class: "doc-row", "data-doc-id": String(doc.id) },
      el("a", { href: `/documents/${doc.id}/` }, doc.title), " ", badge(doc, { short: true }));
    section.prepend(li);
    section.hidden = false;
    if (!isFinal(doc)) followShared(doc.id, li);
  }

  // Shared rows follow their document until it is indexed or failed (poll() covers own documents only).
  const followed = new Map(); // id -> li
  let sharedTimer = 0;
  function followShared(id, li) {
    followed.set(id, li);
    if (!sharedTimer) sharedTimer = setTimeout(pollShared, POLL_MS);
  }
  async function pollShared() {
    await Promise.all([...followed].map(async ([id, li]) => {
      try {
        const doc = await api("GET", `/api/documents/${id}/`);
        li.querySelector(".badge[data-status], .badge").replaceWith(badge(doc, { short: true }));
        if (isFinal(doc)) { followed.delete(id); announcer.textContent = `${doc.title}: ${docStatus(doc).label}`; }
      } catch (err) {
        if (err.status === 404) followed.delete(id);
      }
    }));
    sharedTimer = followed.size ? setTimeout(pollShared, document.hidden ? HIDDEN_POLL_MS : POLL_MS) : 0;
  }
  for (const badgeEl of document.querySelectorAll("[data-collection-list] .doc-row > .badge[data-status]")) {
    if (!["indexed", "failed"].includes(badgeEl.dataset.status)) followShared(Number(badgeEl.closest(".doc-row").dataset.docId), badgeEl.closest(".doc-row"));
  }

  // A curator's "⋯" menu on a collection's rows: re-index, deactivate or activate, move, delete.
  async function curate(button) {
    const li = button.closest("[data-doc-id]");
    const id = li.dataset.docId;
    const title = li.querySelector("a").textContent;
    const action = button.dataset.curate;
    li.querySelector("details.row-menu").open = false;
    try {
      if (action === "delete") {
        const ok = await confirmDialog({ title: tr(gettext("Delete “%(title)s”?"), { title }),
          message: gettext("The file, its text and its index are removed; conversations can no longer search or cite it. This cannot be undone."),
          confirm: gettext("Delete"), danger: true });
        if (!ok) return;
        await api("DELETE", `/api/documents/${id}/`);
        li.remove();
        toast(tr(gettext("Deleted %(title)s"), { title }));
        return;
      }
      if (action === "move") {
        const target = li.querySelector("select[data-move-target]").value;
        if (!target) return;
        const doc = await api("PATCH", `/api/documents/${id}/`, { collection: target });
        const list = document.querySelector(`[data-collection-list="${target}"]`);
        if (list) { list.prepend(li); list.hidden = false; }
        toast(tr(gettext("Moved %(title)s"), { title: doc.title }));
        return;
      }
      const doc = await api("POST", `/api/documents/${id}/${action}/`);
      li.querySelector(".badge[data-status]").replaceWith(badge(doc, { short: true }));
      const inactive = li.querySelector("[data-inactive]");
      if (inactive) inactive.hidden = doc.is_active;
      for (const b of li.querySelectorAll("[data-curate=activate],[data-curate=deactivate]")) {
        b.hidden = (b.dataset.curate === "activate") === doc.is_active;
      }
      if (!isFinal(doc)) followShared(doc.id, li);
      toast(action === "reindex" ? tr(gettext("Re-indexing %(title)s"), { title })
        : doc.is_active ? tr(gettext("Activated %(title)s"), { title }) : tr(gettext("Deactivated %(title)s"), { title }));
    } catch (err) {
      toast(err.message, "error");
    }
  }
  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-collection-list] [data-curate]");
    if (button) curate(button);
  });
  document.addEventListener("click", (event) => {  // an open "⋯" menu closes on a click elsewhere
    for (const menu of document.querySelectorAll("details.row-menu[open]")) if (!menu.contains(event.target)) menu.open = false;
  });

  // What the upload ended with (the same for a normal upload and a direct one's finalize).
  function finishUpload(row, collection, httpStatus, body) {
    if ((httpStatus === 200 || httpStatus === 201) && body && body.id && collection) {
      addShared(collection, body);
      row.finish(body.duplicate ? "dup" : "done", body.duplicate ? gettext("Already in the collection") : gettext("Uploaded ✓"));
    } else if ((httpStatus === 200 || httpStatus === 201) && body && body.id) {
      const known = docs.has(body.id);
      setDoc(body);
      if (!known) total++;
      render();
      if (body.duplicate) {
        const show = el("a", { href: `#doc-${body.id}`, class: "upload-msg", style: "color:inherit",
          onclick: (e) => { e.preventDefault(); flashRow(body.id); } }, tr(gettext("Already in your library as “%(title)s” — show it"), { title: body.title }));
        row.finish("dup", gettext("Duplicate"), show);
      } else {
        row.finish("done", gettext("Uploaded ✓"));
        flashRow(body.id);
        document.dispatchEvent(new CustomEvent("rag:document-uploaded", { detail: body })); // notify.js tells when it is ready
      }
    } else {
      let message = body && body.message;
      if (!message) {
        message = httpStatus === 413 ? tr(gettext("This file is larger than the limit of %(limit)s."), { limit: formatBytes(initial.max_upload_size) })
          : httpStatus === 403 ? gettext("Your session has ended. Sign in again.") : tr(gettext("Upload failed (the server answered %(status)s)."), { status: httpStatus });
      }
      row.finish("error", httpStatus === 415 ? gettext("Not supported") : gettext("Failed"), el("span", { class: "upload-msg" }, message));
    }
  }

  function interrupted(row) {
    row.finish("error", gettext("Failed"), el("span", { class: "upload-msg" }, gettext("The upload was interrupted. Check your connection and try again.")));
  }

  // POST a form with progress; resolves with [status, parsed JSON body or null], or null when the connection failed.
  function postForm(url, form, row, headers) {
    return new Promise((resolve) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", url);
      for (const [name, value] of Object.entries(headers || {})) xhr.setRequestHeader(name, value);
      xhr.upload.addEventListener("progress", (e) => { if (e.lengthComputable) row.progress(e.loaded / e.total); });
      xhr.addEventListener("load", () => {
        let body = null;
        try { body = JSON.parse(xhr.responseText); } catch (err) { body = null; }
        resolve([xhr.status, body]);
      });
      xhr.addEventListener("error", () => resolve(null));
      xhr.send(form);
      row.progress(0);
    });
  }

  async function jsonPost(url, payload) {
    const response = await fetch(url, { method: "POST", credentials: "same-origin", body: JSON.stringify(payload),
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": rag.csrfToken() } });
    let body = null;
    try { body = await response.json(); } catch (err) { body = null; }
    return [response.status, body];
  }

  async function upload(job) {
    const { file, row, collection } = job;
    const direct = initial.direct_upload_min_size;
    if (direct !== null && direct !== undefined && file.size >= direct) {
      if (await directUpload(job)) return;
    }
    const form = new FormData();
    form.append("file", file, file.name);
    if (collection) form.append("collection", collection);
    const result = await postForm("/api/documents/", form, row,
      { "X-CSRFToken": rag.csrfToken(), Accept: "application/json" });
    if (result === null) interrupted(row); else finishUpload(row, collection, result[0], result[1]);
  }

  // A big file goes straight to the bucket: ask for a signed form, post the file there, then finalize.
  // Resolves false when the server has no object storage after all (the normal upload is used).
  async function directUpload({ file, row, collection }) {
    let offer;
    try {
      offer = await jsonPost("/api/documents/upload-url/", { name: file.name, size: file.size,
        content_type: file.type || "application/octet-stream", ...(collection ? { collection } : {}) });
    } catch (err) { interrupted(row); return true; }
    const [offerStatus, signed] = offer;
    if (offerStatus === 400 && signed && signed.code === "object_storage_unavailable") return false;
    if (offerStatus !== 201) { finishUpload(row, collection, offerStatus, signed); return true; }
    const form = new FormData();
    for (const [name, value] of Object.entries(signed.fields)) form.append(name, value);
    form.append("file", file, file.name);
    const sent = await postForm(signed.url, form, row, {});
    if (sent === null) { interrupted(row); return true; }
    if (sent[0] < 200 || sent[0] >= 300) {
      row.finish("error", gettext("Failed"), el("span", { class: "upload-msg" }, tr(gettext("The storage refused the file (it answered %(status)s)."), { status: sent[0] })));
      return true;
    }
    try {
      const [status, body] = await jsonPost("/api/documents/finalize/", { upload_id: signed.upload_id });
      finishUpload(row, collection, status, body);
    } catch (err) { interrupted(row); }
    return true;
  }

  for (const input of document.querySelectorAll("input[data-collection-upload]")) {
    input.addEventListener("change", () => { addFiles([...input.files], input.dataset.collectionUpload); input.value = ""; });
  }

  document.getElementById("choose-files").addEventListener("click", () => fileInput.click());
  fileInput.addEventListener("change", () => { addFiles([...fileInput.files]); fileInput.value = ""; });

  let dragDepth = 0;
  const hasFiles = (e) => e.dataTransfer && [...e.dataTransfer.types].includes("Files");
  window.addEventListener("dragenter", (e) => { if (!hasFiles(e)) return; e.preventDefault(); dragDepth++; dropzone.classList.add("dragover"); });
  window.addEventListener("dragover", (e) => { if (!hasFiles(e)) return; e.preventDefault(); e.dataTransfer.dropEffect = "copy"; });
  window.addEventListener("dragleave", (e) => { if (!hasFiles(e)) return; dragDepth = Math.max(0, dragDepth - 1); if (!dragDepth) dropzone.classList.remove("dragover"); });
  window.addEventListener("drop", (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    dragDepth = 0;
    dropzone.classList.remove("dragover");
    addFiles([...e.dataTransfer.files]);
  });

  for (const doc of initial.documents) docs.set(doc.id, doc);
  render();
  // Relative times ("added 2 minutes ago") stay true.
  setInterval(() => { for (const [id, row] of rows) row.li.querySelector(".doc-meta").textContent = metaLine(docs.get(id)); }, 60000);
})();
