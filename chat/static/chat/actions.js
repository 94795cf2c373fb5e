/* The action row under an answer: copy it as plain text or as Markdown (with the source numbers the
   reader sees). The buttons are drawn by messages.js; the clicks are handled here, for the whole thread.
   And the page's keyboard shortcuts, listed in the #shortcuts dialog (chat.html). */
import { citationsOf, numberedText } from "./citations.js";
import { messages, question, thread } from "./state.js";

const { el, toast } = window.rag;
const gettext = window.gettext || ((text) => text);

/** The answer as the reader sees it, in plain text: its rendered text with [n] for each marker. */
function plainText(node) {
  const body = node.querySelector(".answer-body").cloneNode(true);
  for (const extra of body.querySelectorAll(".note-extractive, .msg-wait, .caret")) extra.remove();
  for (const cite of body.querySelectorAll(".cite")) cite.replaceWith(`[${cite.textContent}]`);
  // innerText (with its line breaks) needs the text laid out: a moment off screen.
  const shelf = el("div", { class: "copy-shelf", "aria-hidden": "true" }, body);
  document.body.append(shelf);
  const text = body.innerText.replace(/\n{3,}/g, "\n\n").trim();
  shelf.remove();
  return text;
}

function markdownText(m) {
  const cites = citationsOf(m);
  const sections = (m.metadata && m.metadata.sections) || [];
  const text = sections.length ? sections.map((s) => s.text).join("\n\n") : (m.content || "");
  return numberedText(text, cites).trim();
}

async function copy(text) {
  try {
    await navigator.clipboard.writeText(text);
  } catch (err) {
    // No clipboard API (a page not served over HTTPS): the older way.
    const area = el("textarea", { class: "copy-shelf", "aria-hidden": "true" });
    area.value = text;
    document.body.append(area);
    area.select();
    const done = document.execCommand("copy");
    area.remove();
    if (!done) throw err;
  }
}

thread.addEventListener("click", async (e) => {
  const button = e.target.closest(".copy-btn");
  if (!button) return;
  const m = messages.get(Number(button.dataset.message));
  const node = button.closest(".msg");
  if (!m || !node) return;
  try {
    await copy(button.dataset.format === "markdown" ? markdownText(m) : plainText(node));
    toast(button.dataset.format === "markdown" ? gettext("Copied as Markdown.") : gettext("Copied."));
  } catch (err) {
    toast(gettext("The answer could not be copied: the browser refused."), "error");
  }
});

// --- keyboard shortcuts ------------------------------------------------------------------------

const help = document.getElementById("shortcuts");
document.getElementById("shortcuts-btn").addEventListener("click", () => help.showModal());
document.getElementById("shortcuts-x").addEventListener("click", () => help.close());

function typing(target) {
  return target.closest("input, textarea, select, [contenteditable=''], [contenteditable='true']") !== null;
}

function lastAnswerButton(selector) {
  // The last answer shown: another branch's answers (versions.js) are in the page but hidden.
  const answers = thread.querySelectorAll(".msg-assistant:not([hidden])");
  const last = answers[answers.length - 1];
  return last ? last.querySelector(selector) : null;
}

document.addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing || typing(e.target)) return;
  if (document.querySelector("dialog[open]") && e.key !== "?") return;
  const act = {
    "?": () => { if (!help.open) help.showModal(); },
    "/": () => question.focus(),
    c: () => { const b = lastAnswerButton('.copy-btn[data-format="plain"]'); if (b) b.click(); },
    m: () => { const b = lastAnswerButton('.copy-btn[data-format="markdown"]'); if (b) b.click(); },
    s: () => { const b = lastAnswerButton(".sources-btn"); if (b) b.click(); },
  }[e.key];
  if (!act) return;
  e.preventDefault();
  act();
});
