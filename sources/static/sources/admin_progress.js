// The source's change page: while a run is going, reload its runs panel every few seconds (live progress).
(function () {
  "use strict";
  function panel() { return document.querySelector(".sources-runs[data-runs-url]"); }
  function poll() {
    var current = panel();
    if (!current || current.dataset.running !== "1") { return; }
    fetch(current.dataset.runsUrl, {credentials: "same-origin"})
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null) { return; }
        var holder = document.createElement("div");
        holder.innerHTML = html;
        var fresh = holder.firstElementChild;
        if (fresh) { current.replaceWith(fresh); }
        setTimeout(poll, 3000);
      })
      .catch(function () { setTimeout(poll, 10000); });
  }
  document.addEventListener("DOMContentLoaded", function () { setTimeout(poll, 3000); });
}());
