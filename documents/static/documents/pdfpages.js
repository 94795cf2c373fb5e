/* The document viewer's "Original pages": a PDF's real pages drawn by PDF.js (vendored in
   documents/static/documents/vendor/pdfjs, no CDN) with their text layer, and the cited passage highlighted on it.

   The PDF is read from the document's download URL, which checks the reader's access like any
   download. Pages are drawn when they come near the screen and a few at most are kept as canvases
   (a 1,000-page document would otherwise hold gigabytes of pixels); their text layers stay.
   window.rag.pdfPages(root) returns the controller viewer.js drives. */
(function () {
  "use strict";
  const { gettext, interpolate } = window.rag; // the JavaScript catalogue (app.js, /jsi18n/)

  const KEEP_CANVASES = 12;
  const MAX_SCALE = 1.6;
  const WORD = /[\p{L}\p{N}]/u;

  /** Letters and digits only, NFKC-folded and lower-cased: the extracted text and the page's text
      layer differ in spaces, line breaks, hyphenation at line ends and ligatures, never in these. */
  function fold(str, onChar) {
    for (let j = 0; j < str.length;) {
      const cp = str.codePointAt(j);
      const ch = String.fromCodePoint(cp);
      for (const c of ch.normalize("NFKC").toLowerCase()) {
        if (WORD.test(c)) onChar(c, j, j + ch.length);
      }
      j += ch.length;
    }
  }

  function foldAll(str) {
    let out = "";
    fold(str || "", (c) => { out += c; });
    return out;
  }

  function occurrences(hay, sub) {
    const found = [];
    for (let at = hay.indexOf(sub); at >= 0; at = hay.indexOf(sub, at + 1)) found.push(at);
    return found;
  }

  function nearest(list, target) {
    let best = -1;
    for (const at of list) if (best < 0 || Math.abs(at - target) < Math.abs(best - target)) best = at;
    return best;
  }

  const MIN_RUN = 12; // folded characters a piece of the passage must match to be marked on its own
  const MIN_COVERED = 0.5; // of the passage, in matched pieces, for it to count as found at all

  /** Where `needle` lies in a page's text items: {start: {item, offset}, end: {item, offset}
      (exclusive), runs: [{start, end}], partial} or null. `where` (0..1) is how far into the page's
      extracted text the passage starts: a passage repeated on the page is taken where it is expected.
      When the whole passage is not found in one piece (the two extractions ordered a table or a
      column differently), only the runs of the page's text that match pieces of the passage (at least
      MIN_RUN letters each, the longest match, else the one nearest to where it is expected) are returned, `partial` set: the
      text between them, another column or a table cell, is never marked. */
  function locate(needle, items, where = 0) {
    let hay = "";
    const map = []; // per UTF-16 unit of `hay`: [item, start, end] in the item's own string
    items.forEach((str, i) => fold(str || "", (c, a, b) => {
      hay += c;
      for (let k = 0; k < c.length; k++) map.push([i, a, b]);
    }));
    const n = foldAll(needle);
    if (!n || !hay) return null;
    const target = Math.max(0, Math.min(1, where || 0)) * hay.length;
    const place = (s, e) => ({ start: { item: map[s][0], offset: map[s][1] }, end: { item: map[e - 1][0], offset: map[e - 1][2] } });
    const s = nearest(occurrences(hay, n), target);
    if (s >= 0) {
      const whole = place(s, s + n.length);
      return { ...whole, runs: [whole], partial: false };
    }
    const runs = matchedRuns(n, hay, target, map);
    const covered = runs.reduce((sum, [a, b]) => sum + b - a, 0);
    if (!runs.length || covered < n.length * MIN_COVERED) return null;
    const placed = runs.map(([a, b]) => place(a, b));
    return { start: placed[0].start, end: placed[placed.length - 1].end, runs: placed, partial: true };
  }

  /** A run without the letter or two it spilled into a neighbouring item by coincidence ("nine" + "T"
      of "TABLE" when the passage goes on with "ten"). */
  function trimmed([a, b], map) {
    const edge = (from, step) => {
      let k = from;
      while (k + step >= a && k + step < b && map[k + step][0] === map[from][0]) k += step;
      return Math.abs(k - from) + 1;
    };
    if (map[a][0] !== map[b - 1][0]) {
      const head = edge(a, 1);
      if (head < 3) a += head;
      const tail = edge(b - 1, -1);
      if (tail < 3) b -= tail;
    }
    return [a, b];
  }

  /** [start, end) ranges of `hay` matching pieces of `n` in order, greedily: from each point of the
      passage, its next MIN_RUN letters where they extend furthest (nearest to where they are expected
      among equals). */
  function matchedRuns(n, hay, target, map) {
    const runs = [];
    let expected = target;
    for (let i = 0; i + MIN_RUN <= n.length;) {
      const free = occurrences(hay, n.slice(i, i + MIN_RUN))
        .filter((at) => !runs.some(([a, b]) => at < b && at + MIN_RUN > a));
      if (!free.length) { i += 1; continue; }
      const extent = (at) => {
        let len = MIN_RUN;
        while (i + len < n.length && at + len < hay.length && n[i + len] === hay[at + len]
               && !runs.some(([a, b]) => at + len >= a && at + len < b)) len++;
        return len;
      };
      // The longest match wins (table rows share words: "Extension ladder 1" is not row 5's), then the nearest.
      const lengths = free.map(extent);
      const longest = Math.max(...lengths);
      const at = nearest(free.filter((_, j) => lengths[j] === longest), expected);
      const len = longest;
      const [a, b] = trimmed([at, at + len], map);
      if (b - a >= MIN_RUN) runs.push([a, b]);
      i += Math.max(1, b - at); // what was trimmed off the end is looked for again
      expected = b;
    }
    runs.sort((x, y) => x[0] - y[0]);
    const merged = [];
    for (const [a, b] of runs) {
      const last = merged[merged.length - 1];
      if (last && a <= last[1]) last[1] = Math.max(last[1], b);
      else merged.push([a, b]);
    }
    return merged;
  }

  function pdfPages(root) {
    const base = root.dataset.pdfjs;
    const status = root.querySelector(".pdf-status");
    const list = root.querySelector(".pdf-pages");
    const pages = new Map(); // number -> {section, sheet, canvas, textLayer, items, divs, state}
    const drawn = []; // page numbers holding a canvas, oldest first
    let pdfjs = null;
    let pdf = null;
    let scale = 1;
    let baseSize = null; // page 1 at scale 1: the placeholders' size
    let highlights = [];
    let loading = null;
    let queue = Promise.resolve();

    function setStatus(text, kind) {
      status.textContent = text || "";
      status.hidden = !text;
      status.dataset.kind = kind || "";
    }

    function fitScale(width) {
      const room = Math.max(200, list.clientWidth || root.clientWidth || 800);
      return Math.min(MAX_SCALE, room / width);
    }

    async function load() {
      if (loading) return loading;
      loading = (async () => {
        setStatus(gettext("Loading the pages…"));
        pdfjs = await import(`${base}build/pdf.min.mjs`);
        pdfjs.GlobalWorkerOptions.workerSrc = `${base}build/pdf.worker.min.mjs`;
        pdf = await pdfjs.getDocument({
          url: root.dataset.src, // same origin: the session cookie goes along, the view checks access
          cMapUrl: `${base}cmaps/`, cMapPacked: true,
          standardFontDataUrl: `${base}standard_fonts/`,
          wasmUrl: `${base}wasm/`, iccUrl: `${base}iccs/`,
          isEvalSupported: false, enableXfa: false,
        }).promise;
        const first = await pdf.getPage(1);
        const vp = first.getViewport({ scale: 1 });
        baseSize = { width: vp.width, height: vp.height };
        scale = fitScale(vp.width);
        const observer = new IntersectionObserver(onVisible, { rootMargin: "800px 0px" });
        for (let n = 1; n <= pdf.numPages; n++) {
          const sheet = rag.el("div", { class: "pdf-sheet" });
          sizeSheet(sheet, baseSize.width, baseSize.height, 1);
          const section = rag.el("section", { class: "pdf-page", "aria-label": interpolate(gettext("Page %(n)s"), { n }, true), dataset: { page: String(n) } },
            rag.el("div", { class: "pdf-page-label", "aria-hidden": "true" }, interpolate(gettext("Page %(n)s"), { n }, true)), sheet);
          list.append(section);
          pages.set(n, { section, sheet, canvas: null, textLayer: null, items: null, divs: null, state: "empty" });
          observer.observe(section);
        }
        setStatus("");
        window.addEventListener("resize", onResize);
      })();
      try {
        await loading;
      } catch (err) {
        const why = err && err.name === "PasswordException" ? gettext("it is protected by a password")
          : err && err.name === "InvalidPDFException" ? gettext("the file is not a valid PDF")
          : err && err.status === 404 ? gettext("the original file is no longer stored")
          // The download redirected to the bucket, another origin, which did not name this site in its
          // CORS rule (the browser says no more than that): `manage.py ensure_bucket` sets it.
          : root.dataset.store === "bucket" ? gettext("the file store did not let this page read the file (its CORS rule must name this site; Download still works)")
          : gettext("it could not be read");
        setStatus(interpolate(gettext("The original pages cannot be shown: %(why)s. The extracted text is still there."), { why }, true), "error");
        throw err;
      }
      return loading;
    }

    function sizeSheet(sheet, width, height, userUnit) {
      sheet.style.width = `${Math.floor(width * scale)}px`;
      sheet.style.height = `${Math.floor(height * scale)}px`;
      sheet.style.setProperty("--scale-factor", String(scale));
      sheet.style.setProperty("--user-unit", String(userUnit));
    }

    function onVisible(entries) {
      for (const entry of entries) {
        if (entry.isIntersecting) render(Number(entry.target.dataset.page)).catch(() => {});
      }
    }

    let resizeTimer = null;
    function onResize() {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(() => {
        if (!baseSize || !list.clientWidth) return;
        const next = fitScale(baseSize.width);
        if (Math.abs(next - scale) / scale < 0.05) return;
        scale = next;
        // Text layers follow --scale-factor by themselves; canvases are redrawn at the new size.
        for (const [n, p] of pages) {
          sizeSheet(p.sheet, p.width || baseSize.width, p.height || baseSize.height, p.userUnit || 1);
          if (p.canvas) dropCanvas(n);
        }
        for (const p of pages.values()) if (isNear(p.section)) render(Number(p.section.dataset.page)).catch(() => {});
      }, 200);
    }

    function isNear(node) {
      const r = node.getBoundingClientRect();
      return r.bottom > -800 && r.top < window.innerHeight + 800;
    }

    function dropCanvas(n) {
      const p = pages.get(n);
      if (!p || !p.canvas) return;
      p.canvas.width = p.canvas.height = 0;
      p.canvas.remove();
      p.canvas = null;
      const at = drawn.indexOf(n);
      if (at >= 0) drawn.splice(at, 1);
    }

    /** Draw page n (canvas + text layer) unless it is drawn; one page at a time. */
    function render(n) {
      const p = pages.get(n);
      if (!p) return Promise.reject(new Error(`no page ${n}`));
      if (p.canvas && p.items) return Promise.resolve(p);
      queue = queue.then(() => draw(n, p), () => draw(n, p));
      return queue;
    }

    async function draw(n, p) {
      if (p.canvas && p.items) return p;
      const page = await pdf.getPage(n);
      const userUnit = page.userUnit || 1;
      const vp1 = page.getViewport({ scale: 1 });
      p.width = vp1.width; p.height = vp1.height; p.userUnit = userUnit;
      sizeSheet(p.sheet, vp1.width, vp1.height, userUnit);
      const viewport = page.getViewport({ scale });
      if (!p.canvas) {
        const ratio = window.devicePixelRatio || 1;
        const canvas = rag.el("canvas", { "aria-hidden": "true" });
        canvas.width = Math.floor(viewport.width * ratio);
        canvas.height = Math.floor(viewport.height * ratio);
        p.sheet.prepend(canvas);
        p.canvas = canvas;
        drawn.push(n);
        await page.render({
          canvasContext: canvas.getContext("2d"), canvas, viewport,
          transform: ratio !== 1 ? [ratio, 0, 0, ratio, 0, 0] : null,
        }).promise;
        while (drawn.length > KEEP_CANVASES) {
          const old = drawn.find((m) => !isNear(pages.get(m).section) && !hasHighlight(m));
          if (old === undefined) break;
          dropCanvas(old);
        }
      }
      if (!p.items) {
        const layer = rag.el("div", { class: "textLayer" });
        p.sheet.append(layer);
        const textLayer = new pdfjs.TextLayer({
          textContentSource: page.streamTextContent({ includeMarkedContent: true, disableNormalization: true }),
          container: layer, viewport,
        });
        await textLayer.render();
        p.textLayer = layer;
        p.items = textLayer.textContentItemsStr;
        p.divs = textLayer.textDivs;
      }
      p.state = "drawn";
      return p;
    }

    function hasHighlight(n) {
      return highlights.some((h) => h.page === n);
    }

    function clear() {
      for (const h of highlights) {
        for (const [div, str] of h.restore) div.textContent = str;
        for (const band of h.bands || []) band.remove();
        const p = pages.get(h.page);
        if (p) p.sheet.classList.remove("has-sentence");
      }
      highlights = [];
    }

    /** [item] -> [[a, b], ...]: the characters of each text item a located result covers. */
    function itemRanges(p, found) {
      const ranges = new Map();
      for (const run of (found && (found.runs || [found])) || []) {
        for (let i = run.start.item; i <= run.end.item; i++) {
          const str = p.items[i];
          if (!p.divs[i] || !str) continue;
          const a = i === run.start.item ? run.start.offset : 0;
          const b = i === run.end.item ? run.end.offset : str.length;
          if (a < b) ranges.set(i, [...(ranges.get(i) || []), [a, b]]);
        }
      }
      return ranges;
    }

    /** One band per line over the cited sentence's spans, from its first letter to its last on that
        line, in the page's own coordinates (a share of the sheet: it follows a resize): the sentence
        reads as one continuous mark, not as a box per word or text item. */
    function sentenceBands(p, spans) {
      const sheet = p.sheet.getBoundingClientRect();
      if (!sheet.width || !sheet.height) return [];
      const lines = [];
      for (const span of spans) {
        for (const r of span.getClientRects()) {
          if (!r.width || !r.height) continue;
          const middle = (r.top + r.bottom) / 2;
          const line = lines.find((l) => middle > l.top && middle < l.bottom);
          if (line) {
            line.left = Math.min(line.left, r.left); line.right = Math.max(line.right, r.right);
            line.top = Math.min(line.top, r.top); line.bottom = Math.max(line.bottom, r.bottom);
          } else lines.push({ left: r.left, right: r.right, top: r.top, bottom: r.bottom });
        }
      }
      const pct = (v, size) => `${((v / size) * 100).toFixed(3)}%`;
      return lines.map((l) => {
        const band = rag.el("div", { class: "sentence-band", "aria-hidden": "true" });
        band.style.left = pct(l.left - sheet.left - 2, sheet.width);
        band.style.width = pct(l.right - l.left + 4, sheet.width);
        band.style.top = pct(l.top - sheet.top - 1, sheet.height);
        band.style.height = pct(l.bottom - l.top + 2, sheet.height);
        p.sheet.insertBefore(band, p.textLayer);
        return band;
      });
    }

    /** Wrap the located characters of a drawn page's text items in `.highlight` spans: each run's own
        characters only (an item holding several runs gets a span for each). `strong`, the cited sentence
        located on the same page, is marked `.highlight.sentence` and under one band per line; the rest of
        the passage stays lighter. */
    function mark(n, p, found, strong) {
      const restore = [];
      const spans = [];
      const strongSpans = [];
      const ranges = itemRanges(p, found);
      const sentence = itemRanges(p, strong);
      for (const [i, parts] of sentence) ranges.set(i, [...(ranges.get(i) || []), ...parts]);
      for (const [i, parts] of ranges) {
        const div = p.divs[i];
        const str = p.items[i];
        restore.push([div, str]);
        const inSentence = (k) => (sentence.get(i) || []).some(([a, b]) => k >= a && k < b);
        const children = [];
        let at = 0;
        for (const [a, b] of parts.sort((x, y) => x[0] - y[0])) {
          if (b <= at) continue;
          const from = Math.max(a, at);
          if (from > at) children.push(str.slice(at, from));
          // Split the marked characters where they enter or leave the sentence.
          for (let k = from; k < b;) {
            const strongHere = inSentence(k);
            let end = k + 1;
            while (end < b && inSentence(end) === strongHere) end++;
            const span = rag.el("span", { class: strongHere ? "highlight sentence" : "highlight", dataset: { page: String(n) } }, str.slice(k, end));
            children.push(span);
            spans.push(span);
            if (strongHere) strongSpans.push(span);
            k = end;
          }
          at = b;
        }
        children.push(str.slice(at));
        div.replaceChildren(...children);
      }
      const bands = strongSpans.length ? sentenceBands(p, strongSpans) : [];
      if (bands.length) p.sheet.classList.add("has-sentence");
      highlights.push({ page: n, restore, spans: strongSpans.length ? strongSpans : spans, bands, partial: found.partial });
      return spans;
    }

    /** Show a passage: `parts` = [{page, text, where}] (its text on each page it covers, from the
        extracted text, and how far into that page's text it starts, 0..1). Resolves to {page, found, partial}: found is false when no page's text
        layer holds it (a scanned page has none), and then the page is shown without a mark. */
    async function showPassage(parts, { scroll = true, sentence = "" } = {}) {
      await load();
      clear();
      let first = null;
      let partial = false;
      let sentenceFound = false;
      for (const part of parts) {
        const p = await render(part.page);
        const found = locate(part.text, p.items, part.where);
        if (!found) continue;
        // The sentence the answer matched, on the page of the passage that holds it (nearest to the passage).
        const strong = sentence && !sentenceFound ? locate(sentence, p.items, part.where) : null;
        const spans = mark(part.page, p, found, strong);
        sentenceFound = sentenceFound || Boolean(strong);
        if (spans.length && !first) first = spans[0];
        partial = partial || found.partial;
      }
      const page = parts.length ? parts[0].page : 1;
      if (scroll) reveal(scroll === "smooth" ? "smooth" : "auto", page);
      return { page, found: Boolean(first), partial, sentence: sentenceFound };
    }

    /** Scroll the first highlight (else the page) into the middle of the screen. */
    function reveal(behavior, page) {
      const spans = highlights.flatMap((h) => h.spans);
      const target = spans[0] || (pages.get(page || 1) || {}).section;
      if (!target) return;
      const bars = (document.querySelector(".topbar") || {}).offsetHeight || 0;
      const banner = document.getElementById("cite-banner");
      const top = bars + (banner && !banner.hidden ? banner.offsetHeight : 0) + 16;
      const r = target.getBoundingClientRect();
      const last = spans.length ? spans[spans.length - 1].getBoundingClientRect() : r;
      const room = window.innerHeight - top;
      const height = Math.max(r.height, last.bottom - r.top);
      const offset = spans.length && height < room * 0.8 ? top + (room - height) / 2 : top;
      window.scrollTo({ top: Math.max(0, window.scrollY + r.top - offset), behavior });
      for (const s of spans) s.classList.add("pulse");
      setTimeout(() => { for (const s of spans) s.classList.remove("pulse"); }, 1400);
    }

    async function goTo(page) {
      await load();
      const p = pages.get(page);
      if (!p) return;
      await render(page);
      window.scrollTo({ top: Math.max(0, window.scrollY + p.section.getBoundingClientRect().top - 80) });
    }

    return { load, showPassage, reveal, goTo, clear, get pageCount() { return pdf ? pdf.numPages : 0; } };
  }

  window.rag = window.rag || {};
  window.rag.pdfPages = pdfPages;
  window.rag.locatePassage = locate;
})();
