/* The document viewer: highlight the chunk named in the address (#chunk-<index>) and keep the status live. */
(function () {
  "use strict";
  const { api, el, badge, docStatus, isFinal } = window.rag;
  const banner = document.getElementById("cite-banner");
  const bannerText = document.getElementById("cite-text");
  let doc = rag.data("document-data");
  let current = [];

  function clear() {
    for (const seg of current) seg.classList.remove("hl", "pulse");
    current = [];
    banner.hidden = true;
  }

  function show(scroll) {
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

  function highlight(scroll) {
    clear();
    const m = location.hash.match(/^#chunk-(\d+)$/);
    if (!m) return;
    const index = m[1];
    const anchor = document.getElementById(`chunk-${index}`);
    current = [...document.querySelectorAll(`.seg[data-c~="${index}"]`)];
    banner.hidden = false;
    if (!anchor || !current.length) {
      bannerText.textContent = "The cited passage is not in this version of the document (it was indexed again since).";
      document.getElementById("cite-again").hidden = true;
      return;
    }
    document.getElementById("cite-again").hidden = false;
    for (const seg of current) seg.classList.add("hl");
    const page = anchor.closest(".doc-page");
    const number = page && page.dataset.page;
    bannerText.textContent = number ? `Cited passage · page ${number}` : "Cited passage";
    anchor.setAttribute("tabindex", "-1");
    anchor.focus({ preventScroll: true });
    show(scroll);
  }

  document.getElementById("cite-again").addEventListener("click", () => show("smooth"));
  document.getElementById("cite-clear").addEventListener("click", () => {
    clear();
    history.replaceState(null, "", location.pathname + location.search);
  });
  window.addEventListener("hashchange", () => highlight("smooth"));
  // After layout (fonts, sticky header) so the passage ends up in the middle of the screen.
  if (document.readyState === "complete") highlight(true);
  else window.addEventListener("load", () => highlight(true));

  // --- status: a document still being indexed updates itself -------------------------------
  const statusBox = document.getElementById("viewer-status");
  const hadText = !document.getElementById("no-text");
  function renderStatus() {
    statusBox.replaceChildren();
    if (doc.status === "indexed" && !rag.hasWarnings(doc)) return;
    statusBox.append(badge(doc));
    const s = docStatus(doc);
    if (s.kind === "busy") statusBox.append(rag.progressBar(s.progress, "Indexing progress"));
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
        statusBox.append(el("div", { class: "detail" }, "A new version of the text is ready. ",
          el("a", { href: location.href, onclick: (e) => { e.preventDefault(); location.reload(); } }, "Show it")));
      }
    } catch (err) {
      return;
    }
    if (!isFinal(doc)) setTimeout(poll, 2000);
  }
  renderStatus();
  if (!isFinal(doc)) setTimeout(poll, 2000);
})();
