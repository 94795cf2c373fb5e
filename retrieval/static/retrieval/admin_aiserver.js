/* The AI server form of the admin (admin/retrieval/aiserver/change_form.html). */
// Fields per kind: the built-in server has no address, key, chat or reranking.
(function () {
  const kind = document.getElementById("id_kind");
  if (!kind) return;
  function apply() {
    const builtin = kind.value === "builtin";
    document.querySelectorAll("fieldset.rs-remote").forEach(function (fs) { fs.style.display = builtin ? "none" : ""; });
    ["embeddings", "embedding_model", "embedding_dim", "embedding_max_input_tokens"].forEach(function (name) {
      const input = document.getElementById("id_" + name);
      if (input) input.disabled = builtin;
    });
  }
  kind.addEventListener("change", apply);
  apply();
})();
