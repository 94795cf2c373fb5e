/* Markdown as safe DOM: answers, sources and passage previews. marked renders (raw HTML in the text is
   escaped: shown as text, never parsed), DOMPurify keeps only the elements Markdown produces and links
   to http(s), mailto and the site's own pages; "slots" let the caller put its own elements (citation
   markers) inside the rendered text. patch() updates a rendered box in place, so a streaming answer
   keeps the blocks that did not change. */
import DOMPurify from "./vendor/dompurify/purify.es.js";
import { Marked } from "./vendor/marked/marked.esm.js";

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHtml = (s) => String(s).replace(/[&<>"']/g, (c) => ESCAPES[c]);

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    // Raw HTML in an answer or a document is text to read, not markup.
    html({ text }) { return escapeHtml(text); },
    // Images would load from anywhere: their text and address as a link instead.
    image({ href, text }) { return `<a href="${escapeHtml(href || "")}">${escapeHtml(text || href || "")}</a>`; },
  },
});

const PURIFY = {
  ALLOWED_TAGS: ["p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre",
    "code", "em", "strong", "del", "a", "table", "thead", "tbody", "tr", "th", "td", "input"],
  ALLOWED_ATTR: ["href", "title", "start", "align", "type", "checked", "disabled"],
  // DOMPurify's own rule with fewer schemes: http(s), mailto, or no scheme at all (a relative address,
  // and the plain values of title, align… which DOMPurify checks with the same rule).
  ALLOWED_URI_REGEXP: /^(?:(?:https?|mailto):|[^a-z]|[a-z+.-]+(?:[^a-z+.\-:]|$))/i,
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
};
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) node.setAttribute("rel", "noopener noreferrer nofollow");
  if (node.tagName === "INPUT" && node.getAttribute("type") !== "checkbox") node.remove(); // task lists only
});

// Private-use characters mark where a slot goes; any in the text itself are dropped first.
const SLOT = /\uE000(\d+)\uE001/g;

/**
 * `text` as a fragment of block elements. `slots(text, put)` may replace parts of the text before
 * rendering: put(nodes) returns a placeholder that becomes those nodes in the rendered text.
 */
export function renderMarkdown(text, slots) {
  const filled = [];
  let source = String(text || "").replace(/[\uE000\uE001]/g, "");
  if (slots) source = slots(source, (nodes) => { filled.push(nodes); return `\uE000${filled.length - 1}\uE001`; });
  const frag = DOMPurify.sanitize(marked.parse(source), PURIFY);
  // A wide table scrolls inside its own box (the table keeps display: table, so its semantics).
  for (const table of frag.querySelectorAll("table")) {
    const box = document.createElement("div");
    box.className = "md-table";
    table.replaceWith(box);
    box.append(table);
  }
  if (filled.length) {
    const walker = document.createTreeWalker(frag, NodeFilter.SHOW_TEXT);
    const hits = [];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) if (n.data.includes("\uE000")) hits.push(n);
    for (const n of hits) {
      const parts = [];
      let last = 0;
      for (const m of n.data.matchAll(SLOT)) {
        parts.push(n.data.slice(last, m.index), ...(filled[Number(m[1])] || []));
        last = m.index + m[0].length;
      }
      parts.push(n.data.slice(last));
      n.replaceWith(...parts.filter((p) => p !== ""));
    }
  }
  return frag;
}

/** Make `box`'s children those of `fresh`, keeping every leading child that is already equal. */
export function patch(box, fresh) {
  const next = [...fresh.childNodes];
  const old = [...box.childNodes];
  let same = 0;
  while (same < next.length && same < old.length && old[same].isEqualNode(next[same])) same++;
  for (const n of old.slice(same)) n.remove();
  box.append(...next.slice(same));
}

/** The element a caret goes at the end of: the last block's innermost last text container. */
export function caretHost(box) {
  let node = box.lastElementChild;
  while (node && node.lastElementChild && ["DIV", "UL", "OL", "LI", "BLOCKQUOTE", "TABLE", "THEAD", "TBODY", "TR", "PRE"].includes(node.tagName)) {
    node = node.lastElementChild;
  }
  return node || box;
}
