/* The chat page's topic picker: the topics in use (GET /api/topics/), saved on the conversation
   (PATCH /api/conversations/{id}/) when changed; composer.js sends the current one with each question. */
(function () {
  "use strict";
  const { api, el, toast, gettext, tr } = window.rag;
  const boot = rag.data("chat-data");
  // The conversation's id once it exists (set when the first question creates it: chat/state.js).
  const convId = () => document.getElementById("chat-section").dataset.conversation;
  const select = document.getElementById("topic-select");
  if (!select) return;
  let current = { category: boot.conversation.category || "", subcategory: boot.conversation.subcategory || "" };

  const key = (t) => JSON.stringify([t.category, t.subcategory]);

  function option(category, subcategory, label) {
    const value = key({ category, subcategory });
    return el("option", { value, selected: value === key(current) }, label);
  }

  function render(topics) {
    const options = [el("option", { value: key({ category: "", subcategory: "" }) }, gettext("No topic (all documents)"))];
    const known = new Set([key({ category: "", subcategory: "" })]);
    for (const t of topics) {
      const group = el("optgroup", { label: t.category || gettext("Without a category") });
      if (t.category) { group.append(option(t.category, "", tr(gettext("%(category)s (all)"), { category: t.category }))); known.add(key({ category: t.category, subcategory: "" })); }
      for (const sub of t.subcategories) {
        group.append(option(t.category, sub, t.category ? `${t.category} › ${sub}` : sub));
        known.add(key({ category: t.category, subcategory: sub }));
      }
      options.push(group);
    }
    if (!known.has(key(current))) { // no longer in use: still shown, so the page tells the truth
      options.push(option(current.category, current.subcategory, [current.category, current.subcategory].filter(Boolean).join(" › ")));
    }
    select.replaceChildren(...options);
    select.value = key(current);
    select.disabled = false;
  }

  select.addEventListener("change", async () => {
    const [category, subcategory] = JSON.parse(select.value);
    const before = current;
    select.disabled = true;
    try {
      // Before the first question the topic goes with it (composer.js reads current()).
      const saved = convId() ? await api("PATCH", `/api/conversations/${convId()}/`, { category, subcategory })
        : { category, subcategory };
      current = { category: saved.category, subcategory: saved.subcategory };
      select.dataset.saved = key(current);
    } catch (err) {
      current = before;
      select.value = key(current);
      toast(err.message, "error");
    } finally {
      select.disabled = false;
    }
  });

  window.ragTopic = { current: () => ({ ...current }) };
  select.dataset.saved = key(current);
  api("GET", "/api/topics/").then((data) => render(data.topics)).catch((err) => toast(err.message, "error"));
})();
