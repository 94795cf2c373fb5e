/* The document viewer: highlight the chunk named in the address (#chunk-<index>) and keep the status live. */
(function () {
  "use strict";
  const { api, el, badge, docStatus, isFinal, gettext, tr } = window.rag;
  const banner = document.getElementById("cite-banner");
  const bannerText = document.getElementById("cite-text");
  let doc = rag.data("document-data");
  let current = [];

  // A PDF whose original is stored shows its real pages (pdfpages.js) unless ?view=text asks for the
  // extracted text; both views mark the cited passage and the other view is one click away.
  const pdfRoot = document.getElementById("pdf-view");
  const textView = document.getElementById("text-view");
  const pagesView = pdfRoot && rag.pdfPages ? rag.pdfPages(pdfRoot) : null;
  const otherButton = document.getElementById("cite-other");
  let mode = pagesView && new URLSearchParams(location.search).get("view") !== "text" ? "pages" : "text";
  if (pdfRoot && !pagesView) { // pdfpages.js did not load: the text is all there is
    pdfRoot.hidden = true;
    textView.hidden = false;
    document.querySelector(".view-tabs").hidden = true;
  }
  let citedPage = null;
  let generation = 0; // a newer highlight() makes an unfinished one's result stale

  // ?sentence=…: the passage's sentences the answer matched (chat's citation link): one continuous mark over
  // them, the rest of the passage lighter (CSS Custom Highlight API: no change to the page's elements).
  const sentence = (new URLSearchParams(location.search).get("sentence") || "").replace(/…$/, "").trim();

  function markSentence(segs) {
    if (!sentence || !window.CSS || !CSS.highlights || typeof Highlight === "undefined") return false;
    let flat = "";
    const at = []; // for each character of `flat`: [text node, offset]
    for (const seg of segs) {
      const walker = document.createTreeWalker(seg, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (node.parentElement.closest(".tpipe")) continue;
        const text = node.nodeValue;
        for (let i = 0; i < text.length; i++) {
          const space = /\s/.test(text[i]);
          if (space && (flat.endsWith(" ") || !flat)) continue;
          flat += space ? " " : text[i];
          at.push([node, i]);
        }
      }
      if (!flat.endsWith(" ")) { flat += " "; at.push(at[at.length - 1]); }
    }
    const wanted = sentence.replace(/\s+/g, " ").toLowerCase();
    const start = flat.toLowerCase().indexOf(wanted);
    if (start < 0 || !wanted) return false;
    const range = document.createRange();
    range.setStart(at[start][0], at[start][1]);
    const [endNode, endOffset] = at[start + wanted.length - 1];
    range.setEnd(endNode, endOffset + 1);
    CSS.highlights.set("cited-sentence", new Highlight(range));
    document.body.classList.add("has-sentence");
    return true;
  }

  function clear() {
    if (window.CSS && CSS.highlights) CSS.highlights.delete("cited-sentence");
    document.body.classList.remove("has-sentence");
    for (const seg of current) seg.classList.remove("hl", "pulse");
    current = [];
    if (pagesView) pagesView.clear();
    banner.hidden = true;
  }

  function show(scroll) {
    if (mode === "pages") {
      if (pagesView) pagesView.reveal(scroll === "smooth" ? "smooth" : "auto", citedPage);
      return;
    }
    if (!current.length) return;
    for (const seg of current) seg.classList.add("pulse");
    setTimeout(() => { for (const seg of current) seg.classList.remove("pulse"); }, 1400);
    if (!scroll) return;
    // Centre a short passage; a long one starts just below the sticky bars.
    const top = current[0].getBoundingClientRect().top;
    const bottom = current[current.length - 1].getBoundingClientRect().bottom;
    const bars = document.querySelector(".topbar").offsetHeight + banner.offsetHeight + 24;
    const room = window.innerHeight - bars;
    const offset = bottom - top > room * 0.8 ? bars : bars + (room - (bottom - top)) / 2;
    window.scrollTo({ top: Math.max(0, window.scrollY + top - offset), behavior: scroll === "smooth" ? "smooth" : "auto" });
  }

  /** The cited chunk's text on each page it covers, from the extracted text's segments, and how
      far into the page's text it starts (letters and digits before it / on the page). */
  function passageByPage(segs) {
    const parts = [];
    const count = (text) => (text.match(/[\p{L}\p{N}]/gu) || []).length;
    for (const seg of segs) {
      const section = seg.closest(".doc-page");
      const page = section && Number(section.dataset.page);
      if (!page) continue;
      if (!parts.length || parts[parts.length - 1].page !== page) {
        const flow = section.querySelector(".flow") || section;
        const before = document.createRange();
        before.setStart(flow, 0);
        before.setEndBefore(seg);
        const total = count(flow.textContent);
        parts.push({ page, text: "", where: total ? count(before.toString()) / total : 0 });
      }
      parts[parts.length - 1].text += seg.textContent;
    }
    return parts;
  }

  function setOther(label) {
    if (!otherButton) return;
    otherButton.hidden = !label;
    otherButton.textContent = label || "";
  }

  async function highlight(scroll) {
    const mine = ++generation;
    clear();
    citedPage = null;
    // #chunk-4, or #chunk-4-5: a passage joined with its neighbour (both chunks highlighted)
    const m = location.hash.match(/^#chunk-(\d+)(?:-(\d+))?$/);
    if (!m) {
      if (mode === "pages") pagesView.load().catch(pagesFailed);
      return;
    }
    const index = m[1];
    const anchor = document.getElementById(`chunk-${index}`);
    const selector = [index, m[2]].filter(Boolean).map((i) => `.seg[data-c~="${i}"]`).join(", ");
    current = [...document.querySelectorAll(selector)];
    banner.hidden = false;
    if (!anchor || !current.length) {
      bannerText.textContent = gettext("The cited passage is not in this version of the document (it was indexed again since).");
      document.getElementById("cite-again").hidden = true;
      setOther(null);
      if (mode === "pages") pagesView.load().catch(pagesFailed);
      return;
    }
    document.getElementById("cite-again").hidden = false;
    for (const seg of current) seg.classList.add("hl");
    const page = anchor.closest(".doc-page");
    const number = page && page.dataset.page;
    citedPage = number ? Number(number) : null;
    bannerText.textContent = number ? tr(gettext("Cited passage · %(page)s"), { page: pageName(number) }) : gettext("Cited passage");
    if (mode === "text") {
      markSentence(current);
      setOther(pagesView ? gettext("Show on the page") : null);
      anchor.setAttribute("tabindex", "-1");
      anchor.focus({ preventScroll: true });
      show(scroll);
      return;
    }
    setOther(gettext("Show in the extracted text"));
    bannerText.textContent = tr(gettext("Finding the cited passage on %(page)s…"), { page: pageName(number || 1) });
    let result;
    try {
      result = await pagesView.showPassage(passageByPage(current), { scroll: scroll ? (scroll === "smooth" ? "smooth" : true) : false, sentence });
    } catch (err) {
      if (mine === generation) pagesFailed();
      return;
    }
    if (mine !== generation) return;
    if (!result.found) {
      bannerText.textContent = tr(gettext("Cited passage · %(page)s: it is not in this page's own text (a scanned page has none), so it is marked in the extracted text only."), { page: pageName(result.page) });
    } else {
      bannerText.textContent = tr(gettext("Cited passage · %(page)s"), { page: pageName(result.page) }) + (result.partial
        ? " " + gettext("(only the parts found on the page are marked: the page shows this text in another order, e.g. in columns or a table)")
        : "");
    }
  }

  /** A page as printed on it: "page 3 (PDF page 5)" where the label printed on it differs from its index. */
  function pageName(number) {
    const section = document.getElementById(`page-${number}`);
    const label = section && section.dataset.label;
    const text = label && label !== String(number) ? gettext("page %(label)s (PDF page %(number)s)") : gettext("page %(number)s");
    return text.replace("%(label)s", label).replace("%(number)s", String(number));
  }

  function setMode(next, scroll) {
    if (!pagesView || next === mode) return;
    mode = next;
    const pages = mode === "pages";
    const tabPages = document.getElementById("tab-pages");
    const tabText = document.getElementById("tab-text");
    tabPages.setAttribute("aria-selected", String(pages));
    tabText.setAttribute("aria-selected", String(!pages));
    tabPages.tabIndex = pages ? 0 : -1;
    tabText.tabIndex = pages ? -1 : 0;
    pdfRoot.hidden = !pages;
    textView.hidden = pages;
    const query = pages ? "" : "?view=text";
    history.replaceState(null, "", location.pathname + query + location.hash);
    highlight(scroll === undefined ? true : scroll);
  }

  function pagesFailed() {
    // The note PDF.js's loader left says why; the text view takes over with it on top.
    const note = pdfRoot.querySelector(".pdf-status");
    setMode("text");
    document.getElementById("tab-pages").disabled = true;
    if (note && note.textContent && !textView.querySelector(".pdf-status")) {
      textView.prepend(rag.el("p", { class: "pdf-status", role: "status", dataset: { kind: "error" } }, note.textContent));
    }
  }

  if (pagesView) {
    pdfRoot.hidden = mode !== "pages";
    textView.hidden = mode === "pages";
    const tabPages = document.getElementById("tab-pages");
    const tabText = document.getElementById("tab-text");
    tabPages.setAttribute("aria-selected", String(mode === "pages"));
    tabText.setAttribute("aria-selected", String(mode === "text"));
    tabPages.tabIndex = mode === "pages" ? 0 : -1;
    tabText.tabIndex = mode === "pages" ? -1 : 0;
    tabPages.addEventListener("click", () => setMode("pages"));
    tabText.addEventListener("click", () => setMode("text"));
    for (const tab of [tabPages, tabText]) {
      tab.addEventListener("keydown", (e) => {
        if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
        const other = tab === tabPages ? tabText : tabPages;
        if (other.disabled) return;
        other.focus();
        other.click();
      });
    }
    otherButton.addEventListener("click", () => setMode(mode === "pages" ? "text" : "pages"));
    // Contents: a page number goes to that page in the page view, a heading to the text.
    const contents = document.querySelector(".doc-contents");
    if (contents) contents.addEventListener("click", (e) => {
      const link = e.target.closest("a");
      if (!link || mode !== "pages") return;
      const pageLink = link.getAttribute("href").match(/^#page-(\d+)$/);
      if (pageLink) {
        e.preventDefault();
        pagesView.goTo(Number(pageLink[1])).catch(() => {});
      } else {
        setMode("text", false);
      }
    });
  }

  document.getElementById("cite-again").addEventListener("click", () => show("smooth"));
  document.getElementById("cite-clear").addEventListener("click", () => {
    generation++;
    clear();
    history.replaceState(null, "", location.pathname + location.search);
  });
  window.addEventListener("hashchange", () => highlight("smooth"));
  // After layout (fonts, sticky header) so the passage ends up in the middle of the screen.
  if (document.readyState === "complete") highlight(true);
  else window.addEventListener("load", () => highlight(true));

  // The file's kind as the library shows it (PDF, DOCX, XLS, PPT, MD, TXT), beside the title.
  const kind = rag.fileKind(doc);
  document.getElementById("viewer-title").prepend(el("div", { class: "doc-icon " + kind, "aria-hidden": "true" }, kind.toUpperCase()));

  // --- status: a document still being indexed updates itself -------------------------------
  const statusBox = document.getElementById("viewer-status");
  const hadText = !document.getElementById("no-text");
  function renderStatus() {
    statusBox.replaceChildren();
    if (doc.status === "indexed" && !rag.hasWarnings(doc)) return;
    statusBox.append(badge(doc));
    const s = docStatus(doc);
    if (s.kind === "busy") statusBox.append(rag.progressBar(s.progress, gettext("Indexing progress")));
    for (const line of s.details) statusBox.append(el("div", { class: "detail" }, line));
  }
  async function poll() {
    try {
      const fresh = await api("GET", `/api/documents/${doc.id}/`);
      const finished = !isFinal(doc) && isFinal(fresh);
      doc = fresh;
      renderStatus();
      if (finished && fresh.status === "indexed") {
        if (!hadText) { location.reload(); return; }
        statusBox.append(el("div", { class: "detail" }, gettext("A new version of the text is ready.") + " ",
          el("a", { href: location.href, onclick: (e) => { e.preventDefault(); location.reload(); } }, gettext("Show it"))));
      }
    } catch (err) {
      return;
    }
    if (!isFinal(doc)) setTimeout(poll, 2000);
  }
  renderStatus();
  if (!isFinal(doc)) setTimeout(poll, 2000);
})();
