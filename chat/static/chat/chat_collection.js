/* The conversation header's collection picker: narrows the conversation's questions to one collection
   the user reads, or searches everything again. Saved with PATCH /api/conversations/{id}/; tells the
   chat page (attachments.js) with a "rag:collection" event so its "Searching: …" line follows. */
(function () {
  "use strict";
  const { api, toast } = window.rag;
  const select = document.getElementById("collection-select");
  if (!select) return;
  const boot = rag.data("chat-data");
  // The conversation's id once it exists (set when the first question creates it: chat/state.js).
  const convId = () => document.getElementById("chat-section").dataset.conversation;
  const box = document.getElementById("collection-control");
  let saved = select.value;

  function mark() { box.classList.toggle("is-narrowed", select.value !== ""); }

  select.addEventListener("change", async () => {
    const wanted = select.value;
    select.disabled = true;
    try {
      // Before the first question the collection goes with it (composer.js reads this select).
      const conversation = convId() ? await api("PATCH", `/api/conversations/${convId()}/`, { collection: wanted || null })
        : { collection: wanted || null };
      saved = conversation.collection || "";
      select.value = saved;
      // The lost collection's placeholder goes once another choice is saved.
      for (const option of [...select.options]) if (option.disabled) option.remove();
      const chosen = boot.collections.find((c) => c.slug === saved) || null;
      document.dispatchEvent(new CustomEvent("rag:collection", { detail: { collection: chosen } }));
      toast(chosen ? rag.tr(rag.gettext("Questions here now search only %(name)s"), { name: chosen.name }) : rag.gettext("Questions here search all your documents and collections"));
    } catch (err) {
      select.value = saved;
      toast(err.message, "error");
    } finally {
      select.disabled = false;
      mark();
    }
  });
  mark();
})();
