/* On every page of a signed-in person: a toast when a document they uploaded is ready or failed, and,
   when they opted in (the user menu), a browser notification too. The documents being indexed are
   asked for once per page load and then every few seconds while any is still being indexed; the ids
   watched are kept in localStorage, so a document that finishes while the person moves between pages
   is told once (another tab that already told it has removed it). */
(function () {
  "use strict";
  const { api, toast, gettext, tr } = window.rag;
  const WATCH = "rag-watched-documents";
  const OPT_IN = "rag-notifications";
  const BUSY = "uploaded,processing,reindexing";
  const PERIOD = 3000;
  let timer = null;

  function watched() {
    try { return JSON.parse(localStorage.getItem(WATCH) || "{}") || {}; } catch (err) { return {}; }
  }
  function keep(map) {
    try {
      if (Object.keys(map).length) localStorage.setItem(WATCH, JSON.stringify(map));
      else localStorage.removeItem(WATCH);
    } catch (err) { /* private mode: this page still tells */ }
  }

  function notify(title, body) {
    if (!("Notification" in window) || Notification.permission !== "granted") return;
    if (localStorage.getItem(OPT_IN) !== "on") return;
    try { new Notification(title, { body, tag: "ragsite-" + title + body }); } catch (err) { /* not on this device */ }
  }

  function tell(doc) {
    if (doc.status === "indexed") {
      const message = tr(gettext("“%(title)s” is ready: you can ask about it."), { title: doc.title });
      toast(message);
      notify(gettext("Document ready"), message);
    } else {
      const message = tr(gettext("“%(title)s” could not be indexed: %(reason)s"),
        { title: doc.title, reason: doc.index_error || gettext("see the library for the reason.") });
      toast(message, "error");
      notify(gettext("Document failed"), message);
    }
  }

  async function look() {
    timer = null;
    let busy;
    try {
      busy = (await api("GET", `/api/documents/?owner=me&status=${BUSY}&page_size=100`)).results;
    } catch (err) {
      return; // signed out or offline: the next page load looks again
    }
    const before = watched();
    const now = {};
    for (const doc of busy) now[doc.id] = doc.title;
    const finished = Object.keys(before).filter((id) => !(id in now));
    // Claim them first: another tab reading the list now no longer sees them.
    const current = watched();
    for (const id of finished) delete current[id];
    keep({ ...current, ...now });
    for (const id of finished) {
      try {
        const doc = await api("GET", `/api/documents/${id}/`);
        if (doc.status === "indexed" || doc.status === "failed") tell(doc);
      } catch (err) { /* deleted meanwhile: nothing to tell */ }
    }
    if (busy.length) timer = setTimeout(look, PERIOD);
  }

  /** An upload on this page started a document (event detail: the document): watch it, look soon. */
  function wake(e) {
    const doc = e && e.detail;
    if (doc && doc.id && !doc.duplicate && !["indexed", "failed"].includes(doc.status)) keep({ ...watched(), [doc.id]: doc.title });
    if (timer) clearTimeout(timer);
    timer = setTimeout(look, 300);
  }
  document.addEventListener("rag:document-uploaded", wake);
  look();

  // The opt-in in the user menu: asks the browser's permission once, then remembers the choice.
  const button = document.querySelector(".notify-toggle");
  if (!button) return;
  if (!("Notification" in window)) { button.hidden = true; return; }
  function label() {
    const on = localStorage.getItem(OPT_IN) === "on" && Notification.permission === "granted";
    button.querySelector(".notify-label").textContent = on ? gettext("Notifications: on") : gettext("Notifications: off");
    button.setAttribute("aria-pressed", on ? "true" : "false");
  }
  button.addEventListener("click", async () => {
    if (localStorage.getItem(OPT_IN) === "on" && Notification.permission === "granted") {
      localStorage.removeItem(OPT_IN);
    } else {
      const answer = Notification.permission === "granted" ? "granted" : await Notification.requestPermission();
      if (answer === "granted") localStorage.setItem(OPT_IN, "on");
      else toast(gettext("The browser blocks notifications for this site; allow them in its site settings."), "error");
    }
    label();
  });
  label();
})();
