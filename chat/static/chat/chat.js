/* The chat page: history, live answers (WebSocket, SSE as fallback), citations, sources, attachments. */
(function () {
  "use strict";
  const { api, el, toast, confirmDialog, icon, timeAgo, plural, badge, isFinal } = window.rag;

  const boot = rag.data("chat-data");
  const convId = boot.conversation.id;
  let conversation = boot.conversation;
  let attached = boot.attached;
  const searchable = boot.searchable_count;

  const thread = document.getElementById("thread");
  const scroller = document.getElementById("chat-scroll");
  const composer = document.getElementById("composer");
  const question = document.getElementById("question");
  const sendBtn = document.getElementById("send-btn");
  const chip = document.getElementById("scope-chip");
  const pills = document.getElementById("pills");
  const panel = document.getElementById("sources-panel");
  const panelList = document.getElementById("sources-list");
  const panelTitle = document.getElementById("sources-title");
  const preview = document.getElementById("preview");

  const messages = new Map(); // id -> message (API shape)
  const liveText = new Map(); // id -> text streamed so far (answers in flight)
  const liveSources = new Map(); // id -> {tag: source} from the "sources" event
  const waits = new Map(); // id of an answer that waits for a document -> {busy, label, error}
  const IN_FLIGHT = new Set(["pending", "streaming"]);
  const TAG_GROUP = /[[［【]\s*((?:source\s*:?\s*)?S\d+(?:\s*(?:[,;/&]|and)\s*(?:source\s*:?\s*)?S\d+)*)\s*[\]］】]/gi;
  const TAG = /S(\d+)/gi;

  // --- citations ---------------------------------------------------------------------------

  /** Tags of a message mapped to numbered citations: {byTag: Map(tag -> cite), numbers: Map(tag -> n)}. */
  function citationsOf(m) {
    const byTag = new Map();
    const numbers = new Map();
    if (m.status === "done") {
      const stored = new Map((m.sources || []).map((s) => [s.source_id, s]));
      for (const c of (m.metadata && m.metadata.citations) || []) {
        const s = stored.get(c.source_id) || {};
        byTag.set(c.source_id, { ...c, snippet: c.snippet_preview, score: s.score, collection: s.collection,
          similarity: s.similarity, tier: s.tier });
        numbers.set(c.source_id, numbers.size + 1);
      }
      return { byTag, numbers };
    }
    const live = liveSources.get(m.id) || {};
    for (const [tag, s] of Object.entries(live)) byTag.set(tag, { ...s, snippet: s.preview });
    // Numbered in order of first appearance, as the stored citations will be.
    const text = liveText.get(m.id) || "";
    for (const group of text.matchAll(TAG_GROUP)) {
      for (const t of group[1].matchAll(TAG)) {
        const tag = `S${parseInt(t[1], 10)}`;
        if (byTag.has(tag) && !numbers.has(tag)) numbers.set(tag, numbers.size + 1);
      }
    }
    return { byTag, numbers };
  }

  function citeHref(c) {
    // The version the answer quoted: the viewer opens its text even after a newer version came.
    const version = c.document_version ? `?version=${c.document_version}` : "";
    return c.document_id ? `/documents/${c.document_id}/${version}#chunk-${c.chunk_index}` : null;
  }

  /** Where a source comes from, in the reader's words. */
  function sourceLabel(c) {
    if (c.source_type === "qa") return "approved answer";
    if (c.collection) return `from the knowledge base ${c.collection}`;
    return "from your documents";
  }

  function labelChip(c) {
    return el("span", { class: "source-label", dataset: { kind: c.source_type === "qa" ? "qa" : (c.collection ? "collection" : "own") } }, sourceLabel(c));
  }

  function whereLabel(c) {
    const parts = [];
    if (c.page_number) parts.push(`page ${c.page_number}`);
    if (c.heading_path && c.heading_path.length) parts.push(c.heading_path.join(" › "));
    return parts.join(" · ");
  }

  function marker(num, c, messageId) {
    const name = c.document_name || (c.source_type === "qa" ? "Approved answer" : "Source");
    const where = whereLabel(c);
    const href = citeHref(c);
    return el(href ? "a" : "button", {
      class: "cite", href, type: href ? null : "button",
      "aria-label": `Source ${num}: ${name}${where ? ", " + where : ""}`,
      dataset: { message: messageId, tag: c.source_id || "" },
    }, String(num));
  }

  /** Text with [S1][S2] groups turned into numbered markers (unknown tags are dropped). */
  function richText(text, cites, messageId) {
    const frag = document.createDocumentFragment();
    let last = 0;
    for (const group of text.matchAll(TAG_GROUP)) {
      frag.append(text.slice(last, group.index).replace(/[ \t]+$/, ""));
      for (const t of group[1].matchAll(TAG)) {
        const tag = `S${parseInt(t[1], 10)}`;
        const c = cites.byTag.get(tag);
        const n = cites.numbers.get(tag);
        if (c && n) frag.append(marker(n, c, messageId));
      }
      last = group.index + group[0].length;
    }
    frag.append(text.slice(last));
    return frag;
  }

  // --- messages ------------------------------------------------------------------------------

  function thinking(label) {
    return el("div", { class: "thinking" }, el("span", { class: "dots", "aria-hidden": "true" }, el("span"), el("span"), el("span")), label);
  }

  function modeNote(m) {
    const mode = m.metadata && m.metadata.mode;
    if (mode === "extractive") return "No language model is configured, so this answer quotes the most relevant passages of your documents.";
    if (mode === "qa_direct" || mode === "approved_answer") return "An approved answer to this question.";
    if (mode === "general") return "Not from your documents: nothing relevant was found in them, so this is a general answer.";
    return null;
  }

  function streamingBody(m) {
    const text = (liveText.get(m.id) || "").replace(/[[［【][^\]］】\n]{0,24}$/, ""); // hide a tag still being written
    const cites = citationsOf(m);
    const box = el("div", { class: "answer-body" });
    if (!text) {
      box.append(thinking(m.status === "pending" ? "Searching your documents…" : "Writing the answer…"));
      return box;
    }
    const paragraphs = text.split(/\n{2,}/);
    paragraphs.forEach((p, i) => {
      const para = el("p", { class: "section" }, richText(p, cites, m.id));
      if (i === paragraphs.length - 1) para.append(el("span", { class: "caret", "aria-hidden": "true" }));
      box.append(para);
    });
    return box;
  }

  function finalBody(m) {
    const cites = citationsOf(m);
    const box = el("div", { class: "answer-body" });
    let sections = (m.metadata && m.metadata.sections) || null;
    if (!sections || !sections.length) sections = (m.content || "").split(/\n{2,}/).filter(Boolean).map((text) => ({ text, source_ids: [] }));
    const note = modeNote(m);
    if (m.metadata && m.metadata.mode === "extractive" && sections.length && !(sections[0].source_ids || []).length) {
      sections = sections.slice(1); // the extractor's own "no language model" line: shown as the note below
    }
    if (note) box.append(el("div", { class: "note-extractive", dataset: { mode: m.metadata.mode } }, icon("info"), " ", note));
    for (const s of sections) box.append(el("p", { class: "section" }, richText(s.text, cites, m.id)));
    if (!sections.length && !note) box.append(el("p", { class: "section muted" }, "(empty answer)"));
    const wait = waitBox(m);
    if (wait) box.append(wait);
    return box;
  }

  // --- an answer that waits for a document being indexed ------------------------------------

  /** Documents the answer waits for that may still become searchable (a failed one will not). */
  function waitedFor(m) {
    if (!m.metadata || m.metadata.mode !== "waiting") return [];
    return (m.metadata.waiting_for_documents || []).filter((d) => d.status !== "failed");
  }

  function waitBox(m) {
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

  function footer(m) {
    const cites = citationsOf(m);
    const foot = el("div", { class: "msg-foot" });
    const n = cites.numbers.size;
    if (n) {
      const button = el("button", { type: "button", class: "btn btn-sm sources-btn", "aria-controls": "sources-panel", "aria-expanded": "false",
        dataset: { message: m.id } }, icon("link"), `${n} ${n === 1 ? "source" : "sources"}`);
      button.addEventListener("click", () => toggleSources(m.id, button));
      foot.append(button);
    } else if (m.metadata && m.metadata.mode && !["plain", "general", "refused", "waiting"].includes(m.metadata.mode)) {
      foot.append(el("span", {}, "No sources cited"));
    }
    const usage = m.metadata && m.metadata.llm_usage;
    if (usage && usage.model && ["llm", "agentic", "documents", "general", "agent"].includes(m.metadata.mode)) foot.append(el("span", {}, usage.model));
    const agent = m.metadata && m.metadata.agent;
    if (agent && ["agentic", "agent"].includes(m.metadata.mode)) {
      const queries = (agent.searches || []).map((s) => `“${s.query}”`).join(", ");
      foot.append(el("span", { title: queries ? `Searched for ${queries}` : "Answered without searching" },
        plural((agent.searches || []).length, "search", "searches")));
    }
    // Where the answer came from: one label per kind of source it cites.
    const origins = new Map();
    for (const c of cites.byTag.values()) if (cites.numbers.has(c.source_id)) origins.set(sourceLabel(c), c);
    const originBox = el("span", { class: "answer-origin" });
    for (const c of origins.values()) originBox.append(labelChip(c), " ");
    if (origins.size) foot.append(originBox);
    foot.append(el("span", { title: new Date(m.updated_at).toLocaleString() }, timeAgo(m.updated_at)));
    return foot;
  }

  function errorBox(m) {
    const retry = el("button", { type: "button", class: "btn btn-sm" }, icon("refresh"), "Retry");
    retry.addEventListener("click", async () => {
      retry.disabled = true;
      try {
        const fresh = await api("POST", `/api/conversations/${convId}/messages/${m.id}/retry/`);
        liveText.delete(m.id);
        liveSources.delete(m.id);
        upsert(fresh);
        ensureLive();
      } catch (err) {
        retry.disabled = false;
        toast(err.message, "error");
      }
    });
    return el("div", { class: "msg-error", role: "alert" }, icon("alert"),
      el("p", {}, m.error || "The answer could not be produced."), retry);
  }

  function renderMessage(m) {
    if (m.role === "user") {
      return el("article", { class: "msg msg-user", id: `msg-${m.id}`, "aria-label": "Question" }, el("div", { class: "bubble" }, m.content));
    }
    const node = el("article", { class: "msg msg-assistant", id: `msg-${m.id}`, "aria-label": "Answer", dataset: { status: m.status } });
    const bubble = el("div", { class: "bubble" });
    node.append(bubble);
    if (IN_FLIGHT.has(m.status)) {
      bubble.append(streamingBody(m));
      node.setAttribute("aria-busy", "true");
    } else if (m.status === "failed") {
      if (m.content) bubble.append(el("p", { class: "section" }, m.content));
      bubble.append(errorBox(m));
    } else {
      bubble.append(finalBody(m));
      node.append(footer(m));
    }
    return node;
  }

  function emptyState() {
    const scope = attached.length ? `the ${plural(attached.length, "document", "documents")} attached below` : "all your documents";
    return el("div", { class: "thread-empty", id: "thread-empty" }, icon("chat", "icon-lg"),
      el("p", {}, el("strong", {}, "Ask a question")),
      el("p", {}, `ragsite searches ${scope} and answers with numbered sources you can open. Use the paperclip to choose documents.`));
  }

  const nearBottom = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 120;
  const toBottom = () => { scroller.scrollTop = scroller.scrollHeight; };

  function upsert(m) {
    messages.set(m.id, m);
    const stick = nearBottom();
    const fresh = renderMessage(m);
    const existing = document.getElementById(`msg-${m.id}`);
    if (existing) {
      existing.replaceWith(fresh);
    } else {
      const empty = document.getElementById("thread-empty");
      if (empty) empty.remove();
      // Keep the order of ids (messages are created in order).
      const later = [...thread.children].find((n) => n.id && Number(n.id.slice(4)) > m.id);
      thread.insertBefore(fresh, later || null);
    }
    if (stick) toBottom();
    if (!panel.hidden && Number(panel.dataset.message) === m.id) showSources(m.id);
  }

  const dirty = new Set();
  let frame = 0;
  function renderLive(id) {
    dirty.add(id);
    if (frame) return;
    frame = requestAnimationFrame(() => {
      frame = 0;
      const stick = nearBottom();
      for (const mid of dirty) {
        const m = messages.get(mid);
        const node = document.getElementById(`msg-${mid}`);
        if (!m || !node || !IN_FLIGHT.has(m.status)) continue;
        node.querySelector(".answer-body").replaceWith(streamingBody(m));
      }
      dirty.clear();
      if (stick) toBottom();
    });
  }

  // --- live events: the conversation's WebSocket, server-sent events when it is unavailable ----

  function onEvent(ev) {
    if (ev.type === "token") {
      const m = messages.get(ev.message_id);
      if (!m) { resync(); return; }
      const have = liveText.get(ev.message_id) || "";
      if (ev.offset > have.length) { refreshMessage(ev.message_id); return; }
      liveText.set(ev.message_id, have.slice(0, ev.offset) + ev.delta);
      if (m.status === "pending") { m.status = "streaming"; upsert(m); } else renderLive(m.id);
    } else if (ev.type === "sources") {
      const map = {};
      for (const s of ev.sources || []) map[s.source_id] = s;
      liveSources.set(ev.message_id, map);
      if (messages.has(ev.message_id)) renderLive(ev.message_id);
    } else if (ev.type === "message.status_updated") {
      const m = ev.message;
      if (!messages.has(m.id)) { resync(); return; }
      if (IN_FLIGHT.has(m.status)) {
        const have = liveText.get(m.id) || "";
        if (m.status === "pending" || (m.content || "").length > have.length) liveText.set(m.id, m.content || "");
        if (m.status === "pending") liveSources.delete(m.id);
      } else {
        liveText.delete(m.id);
        liveSources.delete(m.id);
        closeStream(m.id);
        if (m.status === "done") announce("The answer is ready.");
        if (m.status === "failed") announce("The answer failed.");
      }
      upsert(m);
    }
  }

  const announcer = el("div", { class: "visually-hidden", "aria-live": "polite" });
  document.body.append(announcer);
  function announce(text) { announcer.textContent = text; }

  async function refreshMessage(id) {
    try {
      const m = await api("GET", `/api/conversations/${convId}/messages/${id}/`);
      if (IN_FLIGHT.has(m.status)) {
        const have = liveText.get(id) || "";
        if ((m.content || "").length > have.length) liveText.set(id, m.content);
      }
      upsert(m);
    } catch (err) { /* the next event or reconnect catches up */ }
  }

  let resyncing = false;
  async function resync() {
    if (resyncing) return;
    resyncing = true;
    try {
      let url = `/api/conversations/${convId}/messages/?page_size=200`;
      while (url) {
        const page = await api("GET", url);
        for (const m of page.results) {
          const known = messages.get(m.id);
          if (known && IN_FLIGHT.has(m.status) && (liveText.get(m.id) || "").length >= (m.content || "").length) continue;
          if (IN_FLIGHT.has(m.status)) liveText.set(m.id, m.content || "");
          if (!known || known.status !== m.status || known.updated_at !== m.updated_at) upsert(m);
        }
        url = page.next;
      }
    } catch (err) { /* offline: try again on the next reconnect */ }
    resyncing = false;
    ensureLive();
  }

  let socket = null;
  let socketOpen = false;
  let everOpen = false;
  let backoff = 1000;
  let pinger = 0;
  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    try {
      socket = new WebSocket(`${scheme}://${location.host}/ws/conversations/${convId}/`);
    } catch (err) {
      ensureLive();
      return;
    }
    socket.addEventListener("open", () => {
      socketOpen = true;
      backoff = 1000;
      if (everOpen) resync();
      everOpen = true;
      for (const id of [...streams.keys()]) closeStream(id);
      clearInterval(pinger);
      pinger = setInterval(() => { if (socketOpen) socket.send(JSON.stringify({ type: "ping" })); }, 25000);
    });
    socket.addEventListener("message", (e) => {
      try { onEvent(JSON.parse(e.data)); } catch (err) { /* ignore a malformed event */ }
    });
    socket.addEventListener("close", () => {
      socketOpen = false;
      clearInterval(pinger);
      ensureLive();
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 15000);
    });
  }

  const streams = new Map(); // message id -> EventSource
  function closeStream(id) {
    const es = streams.get(id);
    if (es) { es.close(); streams.delete(id); }
  }
  /** Without an open WebSocket, follow each answer in flight over its SSE stream. */
  function ensureLive() {
    if (socketOpen || typeof EventSource === "undefined") return;
    for (const m of messages.values()) {
      if (m.role !== "assistant" || !IN_FLIGHT.has(m.status) || streams.has(m.id)) continue;
      const es = new EventSource(`/api/conversations/${convId}/messages/${m.id}/stream/`);
      for (const type of ["token", "sources", "message.status_updated"]) {
        es.addEventListener(type, (e) => { try { onEvent(JSON.parse(e.data)); } catch (err) { /* ignore */ } });
      }
      es.addEventListener("error", () => { if (es.readyState === EventSource.CLOSED) streams.delete(m.id); });
      streams.set(m.id, es);
    }
  }

  // --- sources panel and passage previews ------------------------------------------------

  let panelOpener = null;
  /** Similarity a person can read: 1 − cosine distance as a percentage (never the fusion score). */
  function similarityText(c) {
    return typeof c.similarity === "number" ? `${Math.round(c.similarity * 100)}% similar` : null;
  }

  function sourceItem(c, label) {
    const href = citeHref(c);
    const where = whereLabel(c);
    const similarity = similarityText(c);
    return el("li", {}, el(href ? "a" : "div", { class: "source", href },
      el("div", { class: "source-top" },
        label ? el("span", { class: "source-num" }, label) : null,
        el("span", { class: "source-name" }, c.document_name || "Approved answer"),
        similarity ? el("span", { class: "source-score", title: "How close the passage is to the question (1 − cosine distance)" }, similarity) : null),
      el("div", { class: "source-where" }, labelChip(c), where ? ` ${where.charAt(0).toUpperCase() + where.slice(1)}` : ""),
      el("div", { class: "source-snippet" }, c.snippet || "")));
  }

  /** Cited sources first (numbered as in the answer), then the other passages given to the model, collapsed. */
  function showSources(messageId) {
    const m = messages.get(messageId);
    if (!m) return;
    const cites = citationsOf(m);
    panel.dataset.message = messageId;
    panelTitle.textContent = `${cites.numbers.size} ${cites.numbers.size === 1 ? "source" : "sources"}`;
    panelList.replaceChildren();
    for (const [tag, n] of cites.numbers) panelList.append(sourceItem(cites.byTag.get(tag), `[${n}]`));
    const others = ((m.metadata && m.metadata.context_sources) || []).filter((s) => !cites.numbers.has(s.source_id));
    if (others.length) {
      const list = el("ol", { class: "sources-other" });
      for (const s of others) list.append(sourceItem({ ...s, snippet: s.preview }, null));
      panelList.append(el("li", { class: "sources-more" }, el("details", {},
        el("summary", {}, `${plural(others.length, "other passage", "other passages")} retrieved, not cited`), list)));
    }
  }

  function toggleSources(messageId, button) {
    const open = !panel.hidden && Number(panel.dataset.message) === messageId;
    for (const b of document.querySelectorAll(".sources-btn")) b.setAttribute("aria-expanded", "false");
    if (open) { closeSources(); return; }
    showSources(messageId);
    panel.hidden = false;
    button.setAttribute("aria-expanded", "true");
    panelOpener = button;
    panel.focus();
  }

  function closeSources() {
    panel.hidden = true;
    for (const b of document.querySelectorAll(".sources-btn")) b.setAttribute("aria-expanded", "false");
    if (panelOpener && document.body.contains(panelOpener)) panelOpener.focus();
    panelOpener = null;
  }
  document.getElementById("sources-close").addEventListener("click", closeSources);
  panel.addEventListener("keydown", (e) => { if (e.key === "Escape") closeSources(); });

  function showPreview(target) {
    const m = messages.get(Number(target.dataset.message));
    if (!m) return;
    const cites = citationsOf(m);
    const c = cites.byTag.get(target.dataset.tag);
    if (!c) return;
    const where = whereLabel(c);
    preview.replaceChildren(...[
      el("div", { class: "p-doc" }, `[${cites.numbers.get(target.dataset.tag)}] ${c.document_name || "Approved answer"}`),
      where ? el("div", { class: "p-where" }, where.charAt(0).toUpperCase() + where.slice(1)) : null,
      el("div", { class: "p-snippet" }, c.snippet || "")].filter(Boolean));
    preview.hidden = false;
    const r = target.getBoundingClientRect();
    const w = preview.offsetWidth;
    const h = preview.offsetHeight;
    const left = Math.min(Math.max(8, r.left + r.width / 2 - w / 2), window.innerWidth - w - 8);
    const top = r.bottom + 8 + h < window.innerHeight ? r.bottom + 8 : Math.max(8, r.top - h - 8);
    preview.style.left = `${left}px`;
    preview.style.top = `${top}px`;
    target.setAttribute("aria-describedby", "preview");
  }
  function hidePreview(target) {
    preview.hidden = true;
    if (target) target.removeAttribute("aria-describedby");
  }
  thread.addEventListener("mouseover", (e) => { const t = e.target.closest(".cite"); if (t) showPreview(t); });
  thread.addEventListener("mouseout", (e) => { const t = e.target.closest(".cite"); if (t) hidePreview(t); });
  thread.addEventListener("focusin", (e) => { const t = e.target.closest(".cite"); if (t) showPreview(t); });
  thread.addEventListener("focusout", (e) => { const t = e.target.closest(".cite"); if (t) hidePreview(t); });
  document.addEventListener("keydown", (e) => { if (e.key === "Escape" && !preview.hidden) hidePreview(); });
  scroller.addEventListener("scroll", () => { if (!preview.hidden) hidePreview(); }, { passive: true });

  // --- asking ---------------------------------------------------------------------------

  function autosize() {
    question.style.height = "auto";
    question.style.height = `${Math.min(question.scrollHeight, 192)}px`;
  }
  question.addEventListener("input", autosize);
  question.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); composer.requestSubmit(); }
  });

  composer.addEventListener("submit", async (e) => {
    e.preventDefault();
    const content = question.value.trim();
    if (!content || sendBtn.disabled) { question.focus(); return; }
    sendBtn.disabled = true;
    try {
      // The topic picker's current topic (topics.js), so the tiers run under what the reader sees.
      const topic = window.ragTopic ? window.ragTopic.current() : {};
      const pair = await api("POST", `/api/conversations/${convId}/messages/`, { content, ...topic });
      question.value = "";
      autosize();
      upsert(pair.user_message);
      upsert(pair.assistant_message);
      toBottom();
      ensureLive();
      if (!conversation.title) refreshConversation();
    } catch (err) {
      toast(err.message, "error");
    } finally {
      sendBtn.disabled = false;
      question.focus();
    }
  });

  // --- title: rename and delete -------------------------------------------------------------

  const titleEl = document.getElementById("chat-title");
  function showTitle() {
    const text = conversation.title || "New conversation";
    titleEl.textContent = text;
    document.title = `${text} · ragsite`;
  }
  async function refreshConversation() {
    try { conversation = await api("GET", `/api/conversations/${convId}/`); showTitle(); } catch (err) { /* keep the old title */ }
  }

  document.getElementById("rename-btn").addEventListener("click", (e) => {
    const head = document.getElementById("chat-head");
    const opener = e.currentTarget;
    const input = el("input", { type: "text", value: conversation.title, maxlength: "200", "aria-label": "Conversation title" });
    const form = el("form", {}, input, el("button", { type: "submit", class: "btn btn-primary btn-sm" }, "Save"),
      el("button", { type: "button", class: "btn btn-sm", onclick: () => done() }, "Cancel"));
    const hidden = [...head.children];
    for (const n of hidden) n.hidden = true;
    head.append(form);
    input.focus();
    input.select();
    function done() { form.remove(); for (const n of hidden) n.hidden = false; opener.focus(); }
    input.addEventListener("keydown", (ev) => { if (ev.key === "Escape") { ev.preventDefault(); done(); } });
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      try {
        conversation = await api("PATCH", `/api/conversations/${convId}/`, { title: input.value });
        showTitle();
        done();
      } catch (err) { toast(err.message, "error"); }
    });
  });

  document.getElementById("delete-btn").addEventListener("click", async () => {
    const ok = await confirmDialog({ title: "Delete this conversation?", message: "Its questions and answers are deleted. Your documents stay in your library.",
      confirm: "Delete", danger: true });
    if (!ok) return;
    try {
      await api("DELETE", `/api/conversations/${convId}/`);
      location.href = "/";
    } catch (err) { toast(err.message, "error"); }
  });

  // --- attached documents: scope chip, pills, the library picker -------------------------

  function pillState(doc) {
    if (doc.status === "failed") return ["err", `Failed — ${doc.index_error || "indexing failed"}`];
    if (doc.status === "indexed") return ["ok", "Indexed"];
    if (doc.chunk_count > 0) return ["busy", "Re-indexing… (the current version answers)"];
    if (doc.status === "uploaded") return ["warn", "Waiting to index — not searchable yet"];
    return ["busy", "Indexing… not searchable yet"];
  }

  // The collection the conversation is narrowed to (the header's picker, chat_collection.js, says when it changes).
  // null: everything; undefined: none chosen in this page yet and the saved one is not readable any more.
  let narrowedTo = (boot.collections || []).find((c) => c.slug === conversation.collection)
    || (conversation.collection ? undefined : null);
  document.addEventListener("rag:collection", (e) => { narrowedTo = e.detail.collection; renderScope(); });

  function renderScope() {
    const notReady = attached.filter((d) => !(d.chunk_count > 0)).length;
    chip.replaceChildren(icon("search"), "Searching: ", attached.length
      ? el("strong", {}, plural(attached.length, "attached document", "attached documents"))
      : narrowedTo ? el("strong", {}, `${narrowedTo.name} (${plural(narrowedTo.searchable, "document", "documents")})`)
      : narrowedTo === undefined ? el("strong", {}, "a collection you can no longer read")
      : el("strong", {}, `all your documents${(boot.collections || []).length ? " and collections" : ""} (${searchable.toLocaleString()})`),
    ...(notReady ? [el("span", {}, ` · ${notReady} not indexed yet`)] : []));
    pills.replaceChildren(...attached.map((doc) => {
      const [kind, label] = pillState(doc);
      const remove = el("button", { type: "button", "aria-label": `Detach ${doc.title}`, title: "Detach" }, icon("x"));
      remove.addEventListener("click", () => detach(doc));
      return el("li", { class: "pill", dataset: { id: doc.id, status: doc.status } },
        el("span", { class: `pill-state ${kind}`, title: label, "aria-hidden": "true" }),
        el("a", { class: "pill-name", href: `/documents/${doc.id}/`, title: `${doc.name} — ${label}` }, doc.title),
        el("span", { class: "visually-hidden" }, `(${label})`), remove);
    }));
    if (thread.querySelector("#thread-empty")) thread.replaceChildren(emptyState());
    scheduleAttachedPoll();
  }

  let attachedTimer = 0;
  function scheduleAttachedPoll() {
    clearTimeout(attachedTimer);
    if (!attached.some((d) => !isFinal(d))) return;
    attachedTimer = setTimeout(async () => {
      try { attached = await api("GET", `/api/conversations/${convId}/documents/`); } catch (err) { /* try again */ }
      renderScope();
    }, 2000);
  }

  async function detach(doc) {
    const index = attached.findIndex((d) => d.id === doc.id);
    try {
      await api("DELETE", `/api/conversations/${convId}/documents/${doc.id}/`);
    } catch (err) {
      if (err.status !== 404) { toast(err.message, "error"); return; }
    }
    attached = attached.filter((d) => d.id !== doc.id);
    renderScope();
    toast(`Detached ${doc.title}`);
    const next = pills.children[Math.min(index, pills.children.length - 1)];
    (next ? next.querySelector("button") : document.getElementById("attach-btn")).focus();
  }

  const picker = document.getElementById("picker");
  const pickerList = document.getElementById("picker-list");
  const pickerQ = document.getElementById("picker-q");
  const pickerIndexed = document.getElementById("picker-indexed");
  const pickerOk = document.getElementById("picker-ok");
  const pickerCount = document.getElementById("picker-count");
  let library = null;
  let libraryNext = null;
  let selected = new Set();

  async function loadLibrary(url) {
    const page = await api("GET", url);
    library = (library || []).concat(page.results.filter((d) => !(library || []).some((x) => x.id === d.id)));
    libraryNext = page.next;
  }

  function pickerChanges() {
    const current = new Set(attached.map((d) => d.id));
    return { add: [...selected].filter((id) => !current.has(id)), remove: [...current].filter((id) => !selected.has(id)) };
  }

  function renderPicker() {
    const q = pickerQ.value.trim().toLowerCase();
    const onlyIndexed = pickerIndexed.checked;
    pickerList.replaceChildren();
    if (library === null) { pickerList.append(el("li", { class: "picker-empty" }, "Loading your library…")); return; }
    const shown = library.filter((d) => (!q || `${d.title} ${d.name}`.toLowerCase().includes(q)) && (!onlyIndexed || d.chunk_count > 0 || selected.has(d.id)));
    for (const d of shown) {
      const box = el("input", { type: "checkbox", value: d.id });
      box.checked = selected.has(d.id);
      box.addEventListener("change", () => { if (box.checked) selected.add(d.id); else selected.delete(d.id); updatePickerFoot(); });
      const meta = [d.name, rag.formatBytes(d.size), d.pages_total ? plural(d.pages_total, "page", "pages") : null, `added ${timeAgo(d.created_at)}`].filter(Boolean).join(" · ");
      pickerList.append(el("li", { class: "picker-item" }, el("label", {}, box,
        el("span", { style: "min-width:0" }, el("span", { class: "p-name" }, d.title), el("span", { class: "p-meta" }, meta)),
        badge(d, { short: true }))));
    }
    if (!shown.length) {
      pickerList.append(el("li", { class: "picker-empty" }, library.length
        ? (onlyIndexed ? "No indexed document matches. Untick “Indexed only” to see the others." : "No document matches.")
        : el("span", {}, "Your library is empty. ", el("a", { href: "/library/" }, "Upload documents"), " first.")));
    }
    if (libraryNext) {
      const more = el("button", { type: "button", class: "btn btn-sm" }, "Show more");
      more.addEventListener("click", async () => { more.disabled = true; await loadLibrary(libraryNext); renderPicker(); });
      pickerList.append(el("li", { class: "picker-empty" }, more));
    }
    updatePickerFoot();
  }

  function updatePickerFoot() {
    const { add, remove } = pickerChanges();
    pickerCount.textContent = `${selected.size} selected`;
    pickerOk.textContent = !add.length && !remove.length ? "Done" : remove.length ? "Apply changes" : `Attach ${add.length === 1 ? "1 document" : `${add.length} documents`}`;
  }

  const attachBtn = document.getElementById("attach-btn");
  attachBtn.addEventListener("click", async () => {
    selected = new Set(attached.map((d) => d.id));
    pickerQ.value = "";
    library = null;
    renderPicker();
    picker.showModal();
    pickerQ.focus();
    try {
      await loadLibrary("/api/documents/?page_size=100");
    } catch (err) {
      library = [];
      toast(err.message, "error");
    }
    renderPicker();
  });
  pickerQ.addEventListener("input", renderPicker);
  pickerIndexed.addEventListener("change", renderPicker);
  document.getElementById("picker-cancel").addEventListener("click", () => picker.close());
  document.getElementById("picker-x").addEventListener("click", () => picker.close());
  picker.addEventListener("close", () => attachBtn.focus());
  document.getElementById("picker-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const { add, remove } = pickerChanges();
    pickerOk.disabled = true;
    try {
      for (const id of add) await api("POST", `/api/conversations/${convId}/documents/`, { document_id: id });
      for (const id of remove) await api("DELETE", `/api/conversations/${convId}/documents/${id}/`);
      attached = await api("GET", `/api/conversations/${convId}/documents/`);
      renderScope();
      if (add.length) toast(`Attached ${plural(add.length, "document", "documents")}`);
      picker.close();
    } catch (err) {
      toast(err.message, "error");
    } finally {
      pickerOk.disabled = false;
    }
  });

  // --- start ------------------------------------------------------------------------------

  for (const m of boot.messages) {
    messages.set(m.id, m);
    if (IN_FLIGHT.has(m.status)) liveText.set(m.id, m.content || "");
  }
  showTitle();
  renderScope();
  thread.replaceChildren();
  if (!boot.messages.length) thread.append(emptyState());
  for (const m of boot.messages) thread.append(renderMessage(m));
  toBottom();
  connect();
  setTimeout(ensureLive, 3000); // no WebSocket by then: follow answers over SSE
  if (window.matchMedia("(pointer: fine)").matches) question.focus(); // no keyboard popping up on phones
})();
