/* Live events: the conversation's WebSocket, server-sent events when it is unavailable. */
import { renderLive, upsert } from "./messages.js";
import { refreshConversation } from "./title.js";
import { convId, IN_FLIGHT, liveSources, liveText, messages } from "./state.js";

const { api, el, gettext } = window.rag;

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
      if (m.status === "done") announce(gettext("The answer is ready."));
      // The first answer may have given the conversation its title (chat/titles.py): show it.
      if (m.status === "done" && [...messages.values()].filter((x) => x.role === "user").length === 1) refreshConversation();
      if (m.status === "failed") announce(gettext("The answer failed."));
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
export function connect() {
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
export function ensureLive() {
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
