/* Light, dark or the system's choice ("auto"): shared with the Django admin, which keeps it in the
   same place (localStorage "theme": auto | light | dark, applied as <html data-theme="…">, see
   django/contrib/admin/static/admin/js/theme.js). A classic script in <head>, so the page is drawn
   in its theme from the first frame; the toggle in the user menu cycles as the admin's does. */
(function () {
  "use strict";
  const MODES = ["auto", "light", "dark"];

  function stored() {
    try {
      const mode = localStorage.getItem("theme");
      return MODES.includes(mode) ? mode : "auto";
    } catch (err) { return "auto"; }
  }

  function apply(mode) {
    document.documentElement.dataset.theme = mode;
    for (const button of document.querySelectorAll(".theme-toggle")) {
      button.dataset.mode = mode;
      const label = button.querySelector(".theme-label");
      if (label) label.textContent = button.dataset[`label${mode[0].toUpperCase()}${mode.slice(1)}`] || mode;
    }
  }

  function set(mode) {
    try { localStorage.setItem("theme", mode); } catch (err) { /* private mode: this page only */ }
    apply(mode);
  }

  /** The admin's order: from auto to the opposite of what the system shows, then the other, then auto. */
  function cycle() {
    const current = document.documentElement.dataset.theme || stored();
    const prefersDark = window.matchMedia("(prefers-color-scheme: dark)").matches;
    const order = prefersDark ? ["auto", "light", "dark"] : ["auto", "dark", "light"];
    set(order[(order.indexOf(current) + 1) % order.length]);
  }

  apply(stored());
  document.addEventListener("DOMContentLoaded", () => {
    apply(stored());
    for (const button of document.querySelectorAll(".theme-toggle")) button.addEventListener("click", cycle);
  });
  // Another tab (or the admin) changed it.
  window.addEventListener("storage", (e) => { if (e.key === "theme") apply(stored()); });
})();
