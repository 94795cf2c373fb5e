/* Shared helpers for ragsite's pages: API calls, DOM building, dialogs, toasts, document status. */
(function () {
  "use strict";
  // Django's JavaScript catalogue (/jsi18n/, loaded before this script: djangojs.po) and the page's language
  // (<html lang>, set by the server from the reader's choice): numbers, dates and sizes follow it.
  const gettext = window.gettext || ((text) => text);
  const ngettext = window.ngettext || ((one, many, n) => (n === 1 ? one : many));
  const interpolate = window.interpolate || ((fmt, obj) => fmt.replace(/%\((\w+)\)s/g, (m, k) => String(obj[k])));
  const tr = (fmt, values) => interpolate(gettext(fmt), values, true);
  const lang = document.documentElement.lang || undefined;
  function formatNumber(n, options) { return Number(n).toLocaleString(lang, options); }


  function csrfToken() {
    const meta = document.querySelector('meta[name="csrf-token"]');
    if (meta && meta.content) return meta.content;
    const m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return m ? decodeURIComponent(m[1]) : "";
  }

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.message) || interpolate(gettext("The server answered %(status)s."), { status }, true));
      this.status = status;
      this.code = (body && body.code) || "error";
      this.body = body;
    }
  }

  /** fetch() for the JSON API: session cookie + CSRF token; errors become ApiError with the server's message. */
  async function api(method, url, body) {
    const options = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (method !== "GET" && method !== "HEAD") options.headers["X-CSRFToken"] = csrfToken();
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(url, options);
    } catch (err) {
      throw new ApiError(0, { code: "network", message: gettext("Could not reach ragsite. Check your connection and try again.") });
    }
    if (response.status === 204) return null;
    let data = null;
    const text = await response.text();
    if (text) {
      try { data = JSON.parse(text); } catch (err) { data = null; }
    }
    if (!response.ok) {
      if (response.status === 401 || response.status === 403) {
        if (!data || !data.message) data = { code: "auth", message: gettext("Your session has ended. Sign in again.") };
      }
      throw new ApiError(response.status, data);
    }
    return data;
  }

  /** Tiny DOM builder: el("a", {href, class, onclick}, "text", child...). Never parses HTML. */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
      else if (value === true) node.setAttribute(key, "");
      else node.setAttribute(key, String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const SVG_NS = "http://www.w3.org/2000/svg";
  /** An icon from the sprite in base.html (decorative: hidden from screen readers). */
  function icon(name, extraClass) {
    const svg = document.createElementNS(SVG_NS, "svg");
    svg.setAttribute("class", "icon" + (extraClass ? " " + extraClass : ""));
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("focusable", "false");
    const use = document.createElementNS(SVG_NS, "use");
    use.setAttribute("href", "#i-" + name);
    svg.append(use);
    return svg;
  }

  function toast(message, kind) {
    const box = document.getElementById("toasts");
    if (!box) return;
    const item = el("div", { class: "toast" + (kind === "error" ? " err" : "") }, message);
    // Clear of the header and of a page's own head (the chat's conversation title): just below the lower one.
    let top = 0;
    for (const head of document.querySelectorAll(".topbar, .chat-head")) {
      const rect = head.getBoundingClientRect();
      if (rect.height && rect.bottom > top) top = rect.bottom;
    }
    if (top) box.style.top = `${Math.round(top + 8)}px`;
    box.append(item);
    setTimeout(() => item.remove(), kind === "error" ? 7000 : 4000);
  }

  /** A modal confirmation (native <dialog>: focus trapped, Escape cancels). Resolves true/false. */
  function confirmDialog({ title, message, confirm = gettext("OK"), danger = false }) {
    return new Promise((resolve) => {
      const ok = el("button", { type: "button", class: "btn " + (danger ? "btn-danger-solid" : "btn-primary") }, confirm);
      const cancel = el("button", { type: "button", class: "btn" }, gettext("Cancel"));
      const titleId = "dlg-" + Math.random().toString(36).slice(2);
      const dialog = el("dialog", { "aria-labelledby": titleId, class: "confirm-dialog" },
        el("div", { class: "dialog-body" }, el("h2", { id: titleId }, title), message ? el("p", {}, message) : null),
        el("div", { class: "dialog-foot" }, cancel, ok));
      let answer = false;
      ok.addEventListener("click", () => { answer = true; dialog.close(); });
      cancel.addEventListener("click", () => dialog.close());
      dialog.addEventListener("close", () => { dialog.remove(); resolve(answer); });
      document.body.append(dialog);
      dialog.showModal();
      cancel.focus();
    });
  }

  /** A file size in the page's language: "1.5 MB" in English, "1,5 MB" in Czech. */
  function formatBytes(n) {
    if (n === null || n === undefined) return "";
    if (n < 1024) return interpolate(gettext("%(n)s B"), { n: formatNumber(n) }, true);
    const units = ["KB", "MB", "GB"];
    let value = n / 1024, i = 0;
    while (value >= 1024 && i < units.length - 1) { value /= 1024; i++; }
    return `${formatNumber(value, { maximumFractionDigits: value < 10 ? 1 : 0, minimumFractionDigits: value < 10 ? 1 : 0 })} ${units[i]}`;
  }

  const rtf = typeof Intl !== "undefined" && Intl.RelativeTimeFormat ? new Intl.RelativeTimeFormat(lang, { numeric: "auto" }) : null;
  function timeAgo(iso) {
    if (!iso) return "";
    const then = new Date(iso);
    const seconds = Math.round((then.getTime() - Date.now()) / 1000);
    const abs = Math.abs(seconds);
    if (!rtf) return then.toLocaleString(lang);
    if (abs < 45) return gettext("just now");
    if (abs < 3600) return rtf.format(Math.round(seconds / 60), "minute");
    if (abs < 86400) return rtf.format(Math.round(seconds / 3600), "hour");
    if (abs < 86400 * 7) return rtf.format(Math.round(seconds / 86400), "day");
    return then.toLocaleDateString(lang, { year: "numeric", month: "short", day: "numeric" });
  }

  function fileKind(doc) {
    const mime = doc.mime_type || "";
    const name = (doc.name || "").toLowerCase();
    if (mime === "application/pdf") return "pdf";
    if (mime.includes("wordprocessingml")) return "docx";
    if (mime === "text/markdown" || name.endsWith(".md")) return "md";
    if (mime.includes("spreadsheetml") || mime.includes("ms-excel") || mime.includes("opendocument.spreadsheet")
      || mime === "text/csv" || /\.(xlsx|xls|ods|csv)$/.test(name)) return "xls";
    if (mime.includes("presentationml") || mime.includes("ms-powerpoint") || /\.(pptx|ppt|odp)$/.test(name)) return "ppt";
    if (mime === "application/vnd.oasis.opendocument.text" || name.endsWith(".odt")) return "odt";
    if (mime === "application/epub+zip" || name.endsWith(".epub")) return "epub";
    if (mime === "text/html" || /\.html?$/.test(name)) return "html";
    if (mime === "message/rfc822" || name.endsWith(".eml")) return "eml";
    return "txt";
  }

  const FINAL = new Set(["indexed", "failed"]);
  function isFinal(doc) { return FINAL.has(doc.status); }
  function hasWarnings(doc) {
    return (doc.index_warnings && doc.index_warnings.length > 0) || (doc.empty_pages && doc.empty_pages.length > 0);
  }

  /** A count in words, from a format ngettext chose: count(ngettext("%(n)s page", "%(n)s pages", n), n). */
  function count(fmt, n) { return interpolate(fmt, { n: formatNumber(n) }, true); }

  // How fast each document's current step goes, measured on this page: id -> {phase, t0, f0}.
  const rates = new Map();
  /** "about 2 min left" from the rate measured since the step was first seen here; null until it can tell. */
  function timeLeft(doc, phase, fraction) {
    const now = Date.now();
    const seen = rates.get(doc.id);
    if (!seen || seen.phase !== phase || fraction < seen.f0) {
      rates.set(doc.id, { phase, t0: now, f0: fraction });
      return null;
    }
    const elapsed = (now - seen.t0) / 1000;
    if (elapsed < 3 || fraction <= seen.f0 || fraction >= 1) return null;
    const seconds = ((1 - fraction) * elapsed) / (fraction - seen.f0);
    if (seconds < 60) return tr(gettext("about %(n)s s left"), { n: Math.max(5, Math.round(seconds / 5) * 5) });
    if (seconds < 3600) return tr(gettext("about %(n)s min left"), { n: Math.round(seconds / 60) });
    return tr(gettext("about %(n)s h left"), { n: Math.round(seconds / 360) / 10 });
  }

  /**
   * What a document's status looks like to a person:
   * {label, kind: ok|warn|err|busy|idle, progress: 0..1|null (null = indeterminate), eta, title (tooltip), details[]}.
   * Plain words: "Reading page 12 of 117", "Cutting the text into passages…", "Making it searchable 40 %", "Ready";
   * chunk counts only in the tooltip.
   */
  function docStatus(doc) {
    const reindexing = doc.status === "reindexing" || (doc.status === "processing" && doc.chunk_count > 0);
    const chunks = doc.chunk_count ? count(ngettext("%(n)s passage indexed", "%(n)s passages indexed", doc.chunk_count), doc.chunk_count) : "";
    if (doc.status === "indexed") {
      rates.delete(doc.id);
      if (hasWarnings(doc)) {
        const details = [];
        if (doc.empty_pages && doc.empty_pages.length && !(doc.index_warnings && doc.index_warnings.length)) {
          const pages = doc.empty_pages.slice(0, 12).join(", ") + (doc.empty_pages.length > 12 ? ", …" : "");
          details.push(interpolate(ngettext("No text on page %(pages)s (scanned images are not read).", "No text on pages %(pages)s (scanned images are not read).", doc.empty_pages.length), { pages }, true));
        }
        for (const w of doc.index_warnings || []) details.push(String(w));
        return { label: gettext("Ready, with warnings"), kind: "warn", title: chunks, details, chunks: doc.chunk_count };
      }
      return { label: gettext("Ready"), kind: "ok", title: chunks, details: [] };
    }
    if (doc.status === "failed") {
      return { label: `${gettext("Failed")} — ${doc.index_error || gettext("unknown reason")}`, kind: "err", details: [] };
    }
    if (doc.status === "uploaded" || (doc.status === "reindexing")) {
      const retrying = doc.index_error ? [doc.index_error] : [];
      if (reindexing) return { label: gettext("Re-indexing…"), kind: "busy", progress: null, details: retrying.length ? retrying : [gettext("Waiting for a worker. The current version keeps answering.")] };
      return { label: gettext("Uploaded — waiting to index"), kind: "idle", progress: null, details: retrying };
    }
    // processing: first the pages are read, then the passages are made searchable (embedded).
    let progress = null, eta = null;
    let label = gettext("Reading the document…");
    let title = chunks;
    if (doc.chunks_total > 0) {
      title = tr(gettext("%(done)s of %(total)s passages made searchable"), { done: doc.chunks_embedded.toLocaleString(), total: doc.chunks_total.toLocaleString() });
      if (doc.chunks_embedded > 0) {
        progress = Math.min(1, doc.chunks_embedded / doc.chunks_total);
        label = tr(gettext("Making it searchable %(percent)s %"), { percent: Math.floor(progress * 100) });
        eta = timeLeft(doc, "embed", progress);
      } else {
        // Until the first batch of passages comes back: a bar that moves, not a "0 %" that looks stuck.
        label = gettext("Making it searchable…");
        timeLeft(doc, "embed", 0);
      }
    } else if (doc.pages_total && doc.pages_done >= doc.pages_total) {
      label = gettext("Cutting the text into passages…");  // every page read; the passages come next
    } else if (doc.pages_total) {
      progress = Math.min(1, doc.pages_done / doc.pages_total);
      // The page being read now: page 1 as soon as the page count is known, then one more per page read.
      label = tr(gettext("Reading page %(page)s of %(total)s"), { page: formatNumber(Math.min(doc.pages_done + 1, doc.pages_total)), total: formatNumber(doc.pages_total) });
      eta = timeLeft(doc, "read", progress);
    }
    if (doc.progress_note && !doc.chunks_total) label += ` (${doc.progress_note})`;  // "OCR 12 of 40 pages"
    if (reindexing) label = `${gettext("Re-indexing:")} ${label.charAt(0).toLowerCase()}${label.slice(1)}`;
    if (eta) label += ` · ${eta}`;
    return { label, kind: "busy", progress, eta, title, details: reindexing ? [gettext("The current version keeps answering until this finishes.")] : [] };
  }

  function badge(doc, { short = false } = {}) {
    const s = docStatus(doc);
    const label = short && s.short ? s.short : s.label;
    const kindClass = { ok: "badge-ok", warn: "badge-warn", err: "badge-err", busy: "badge-busy", idle: "" }[s.kind];
    const cut = s.kind === "err" ? label.indexOf(" — ") : -1;
    const text = cut > 0 ? [el("strong", {}, label.slice(0, cut + 3)), el("span", { class: "reason" }, label.slice(cut + 3))] : [label];
    return el("span", { class: `badge ${kindClass}`, title: s.title || null, dataset: { status: doc.status } }, el("span", { class: "dot", "aria-hidden": "true" }), el("span", {}, ...text));
  }

  function progressBar(fraction, label) {
    const bar = el("div", { class: "progress" + (fraction === null ? " indeterminate" : ""), role: "progressbar", "aria-label": label || gettext("Progress"),
      "aria-valuemin": "0", "aria-valuemax": "100", "aria-valuenow": fraction === null ? null : String(Math.round(fraction * 100)) }, el("span"));
    bar.firstChild.style.width = fraction === null ? "35%" : `${Math.round(fraction * 100)}%`;
    return bar;
  }

  /** Read a json_script payload. */
  function data(id) {
    const node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }

  window.rag = { icon, api, ApiError, el, toast, confirmDialog, formatBytes, timeAgo, fileKind, isFinal, docStatus, badge,
    progressBar, data, csrfToken, count, hasWarnings, gettext, ngettext, interpolate, tr, lang, formatNumber };
})();

/* The user menu (base.html): closes on Escape and on a click elsewhere. */
(function () {
  "use strict";
  const menu = document.querySelector(".user-menu");
  if (!menu) return;
  document.addEventListener("click", (e) => { if (menu.open && !menu.contains(e.target)) menu.open = false; });
  menu.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && menu.open) { menu.open = false; menu.querySelector("summary").focus(); }
  });
})();
