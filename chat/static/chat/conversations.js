/* The conversations list: rename in place, delete with confirmation. */
(function () {
  "use strict";
  const { api, el, toast, confirmDialog, timeAgo, gettext, tr } = window.rag;
  const list = document.getElementById("conv-list");
  for (const t of document.querySelectorAll("time[data-ago]")) t.textContent = tr(gettext("updated %(when)s"), { when: timeAgo(t.getAttribute("datetime")) });
  if (!list) return;

  function label(title) { return title || gettext("New conversation"); }

  function startRename(li) {
    const link = li.querySelector(".conv-title");
    const actions = li.querySelector(".conv-actions");
    const input = el("input", { type: "text", value: li.dataset.title, maxlength: "200", "aria-label": gettext("Conversation title") });
    const save = el("button", { type: "submit", class: "btn btn-primary btn-sm" }, gettext("Save"));
    const cancel = el("button", { type: "button", class: "btn btn-sm" }, gettext("Cancel"));
    const form = el("form", { class: "conv-rename" }, input, save, cancel);
    link.hidden = true;
    actions.hidden = true;
    link.after(form);
    input.focus();
    input.select();
    const close = (focusRename) => {
      form.remove();
      link.hidden = false;
      actions.hidden = false;
      if (focusRename) actions.querySelector('[data-action="rename"]').focus();
    };
    cancel.addEventListener("click", () => close(true));
    input.addEventListener("keydown", (e) => { if (e.key === "Escape") { e.preventDefault(); close(true); } });
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      save.disabled = true;
      try {
        const updated = await api("PATCH", `/api/conversations/${li.dataset.id}/`, { title: input.value });
        li.dataset.title = updated.title;
        link.textContent = label(updated.title);
        for (const b of actions.querySelectorAll("button")) {
          b.setAttribute("aria-label", tr(b.dataset.action === "rename" ? gettext("Rename “%(title)s”") : gettext("Delete “%(title)s”"), { title: label(updated.title) }));
        }
        close(true);
        toast(gettext("Renamed"));
      } catch (err) {
        save.disabled = false;
        toast(err.message, "error");
      }
    });
  }

  async function remove(li) {
    const ok = await confirmDialog({ title: tr(gettext("Delete “%(title)s”?"), { title: label(li.dataset.title) }),
      message: gettext("Its questions and answers are deleted. Your documents stay in your library."), confirm: gettext("Delete"), danger: true });
    if (!ok) return;
    try {
      await api("DELETE", `/api/conversations/${li.dataset.id}/`);
    } catch (err) {
      if (err.status !== 404) { toast(err.message, "error"); return; }
    }
    const next = li.nextElementSibling || li.previousElementSibling;
    li.remove();
    toast(gettext("Conversation deleted"));
    if (next) next.querySelector(".conv-title").focus();
    if (!list.children.length) { list.remove(); document.getElementById("conv-empty").hidden = false; }
  }

  list.addEventListener("click", (e) => {
    const button = e.target.closest("button[data-action]");
    if (!button) return;
    const li = button.closest(".conv");
    if (button.dataset.action === "rename") startRename(li);
    else remove(li);
  });
})();
