/* Citations of an answer: its [S1][S2] tags as numbered markers, and where each source comes from. */
import { renderMarkdown } from "./markdown.js";
import { liveSources, liveText } from "./state.js";

const { el } = window.rag;
const gettext = window.gettext || ((text) => text); // the JavaScript catalogue, once there is one
const fill = (text, values) => text.replace(/%\((\w+)\)s/g, (_, key) => String(values[key]));
const TAG_GROUP = /[[［【]\s*((?:source\s*:?\s*)?S\d+(?:\s*(?:[,;/&]|and)\s*(?:source\s*:?\s*)?S\d+)*)\s*[\]］】]/gi;
const TAG = /S(\d+)/gi;

/** Tags of a message mapped to numbered citations: {byTag: Map(tag -> cite), numbers: Map(tag -> n)}. */
export function citationsOf(m) {
  const byTag = new Map();
  const numbers = new Map();
  if (m.status === "done") {
    const stored = new Map((m.sources || []).map((s) => [s.source_id, s]));
    for (const c of (m.metadata && m.metadata.citations) || []) {
      const s = stored.get(c.source_id) || {};
      // The sentences the answer's citing text matches (chat/citations.py), else the passage's opening.
      byTag.set(c.source_id, { ...c, snippet: c.match_preview || c.snippet_preview, score: s.score, collection: s.collection,
        page_label: c.page_label || s.page_label,
        similarity: s.similarity, tier: s.tier, category: s.category, subcategory: s.subcategory,
        expired: s.expired });
      numbers.set(c.source_id, numbers.size + 1);
    }
    return { byTag, numbers };
  }
  const live = liveSources.get(m.id) || {};
  for (const [tag, s] of Object.entries(live)) byTag.set(tag, { ...s, snippet: s.preview });
  // Numbered in order of first appearance, as the stored citations will be.
  const text = liveText.get(m.id) || "";
  for (const group of text.matchAll(TAG_GROUP)) {
    for (const t of group[1].matchAll(TAG)) {
      const tag = `S${parseInt(t[1], 10)}`;
      if (byTag.has(tag) && !numbers.has(tag)) numbers.set(tag, numbers.size + 1);
    }
  }
  return { byTag, numbers };
}

export function citeHref(c) {
  // The version the answer quoted: the viewer opens its text even after a newer version came; and the
  // sentences the answer matched, which the viewer marks within the passage.
  const query = new URLSearchParams();
  if (c.document_version) query.set("version", c.document_version);
  if (c.match_preview) query.set("sentence", c.match_preview);
  const version = query.toString() ? `?${query}` : "";
  if (!c.document_id) return null;
  // A passage joined with its neighbour (ids in the document's order, adjacent): highlight both chunks.
  const joined = c.joined_chunk_ids;
  if (joined && joined.length === 2 && c.chunk_id && c.chunk_index != null) {
    const first = joined[0] === c.chunk_id ? c.chunk_index : c.chunk_index - 1;
    return `/documents/${c.document_id}/${version}#chunk-${first}-${first + 1}`;
  }
  return `/documents/${c.document_id}/${version}#chunk-${c.chunk_index}`;
}

/** Where a source comes from, in the reader's words. */
export function sourceLabel(c) {
  if (c.source_type === "qa") return gettext("approved answer");
  if (c.collection) return fill(gettext("from the knowledge base %(name)s"), { name: c.collection });
  return gettext("from your documents");
}

export function labelChip(c) {
  return el("span", { class: "source-label", dataset: { kind: c.source_type === "qa" ? "qa" : (c.collection ? "collection" : "own") } }, sourceLabel(c));
}

/** The page as printed on it: "page 7 (PDF page 9)" where the printed label and the PDF's index differ, else "page 7". */
export function pageText(c) {
  if (!c.page_number) return "";
  const label = c.page_label ? String(c.page_label) : String(c.page_number);
  if (label === String(c.page_number)) return fill(gettext("page %(page)s"), { page: label });
  return fill(gettext("page %(label)s (PDF page %(page)s)"), { label, page: c.page_number });
}

export function whereLabel(c) {
  const parts = [];
  const topic = [c.category, c.subcategory].filter(Boolean).join(" › "); // an approved pair's topic
  if (c.source_type === "qa" && topic) parts.push(topic);
  if (c.page_number) parts.push(pageText(c));
  if (c.heading_path && c.heading_path.length) parts.push(c.heading_path.join(" › "));
  return parts.join(" · ");
}

/** What a source is called: an approved Q&A pair in the reader's language (retrieval stores it in
    English for the model), a document by its name. */
export function sourceName(c) {
  if (c.source_type === "qa" || (c.qa_id && !c.document_id)) return gettext("Approved answer");
  return c.document_name || gettext("Source");
}

function marker(num, c, messageId) {
  const name = sourceName(c);
  const where = whereLabel(c);
  const href = citeHref(c);
  return el(href ? "a" : "button", {
    class: "cite", href, type: href ? null : "button",
    "aria-label": fill(gettext("Source %(num)s: %(name)s"), { num, name }) + (where ? ", " + where : ""),
    dataset: { message: messageId, tag: c.source_id || "" },
  }, String(num));
}

/** Markdown text as safe DOM with its [S1][S2] groups turned into numbered markers (unknown tags are dropped). */
export function richText(text, cites, messageId) {
  const groups = new RegExp(`[ \\t]*${TAG_GROUP.source}`, "gi");
  return renderMarkdown(text, (source, put) => source.replace(groups, (whole, inner) => {
    const nodes = [];
    for (const t of inner.matchAll(TAG)) {
      const tag = `S${parseInt(t[1], 10)}`;
      const c = cites.byTag.get(tag);
      const n = cites.numbers.get(tag);
      if (c && n) nodes.push(marker(n, c, messageId));
    }
    return put(nodes);
  }));
}

/** Markdown text with its [S1][S2] groups as the numbers the reader sees ("[1][2]"); unknown tags dropped. */
export function numberedText(text, cites) {
  return String(text || "").replace(new RegExp(TAG_GROUP.source, "gi"), (whole, inner) => {
    const nums = [];
    for (const t of inner.matchAll(TAG)) {
      const n = cites.numbers.get(`S${parseInt(t[1], 10)}`);
      if (n && !nums.includes(n)) nums.push(n);
    }
    return nums.map((n) => `[${n}]`).join("");
  });
}
