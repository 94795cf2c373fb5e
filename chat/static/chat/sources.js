/* The sources panel of an answer and the passage preview of a citation marker. */
import { citationsOf, citeHref, labelChip, sourceName, whereLabel } from "./citations.js";
import { renderMarkdown } from "./markdown.js";
import { feedbackOf, messages, panel, panelList, panelTitle, preview, scroller, thread } from "./state.js";

const { el, icon, count, ngettext } = window.rag;
const gettext = window.gettext || ((text) => text); // the JavaScript catalogue, once there is one
const fill = (text, values) => text.replace(/%\((\w+)\)s/g, (_, key) => String(values[key]));

let panelOpener = null;
/** Relevance a person can read: the passage's rank among those given to the model ("#1 of 5"), never a raw
    cosine similarity (with small embedding models unrelated texts score 80 %). */
function rankText(c, ranks) {
  const rank = ranks.get(c.source_id);
  return rank ? fill(gettext("#%(rank)s of %(total)s"), { rank, total: ranks.size }) : null;
}

/** A cited source's own 👎 (feedback.js handles the clicks), pressed when the user rated it down. */
function sourceFeedback(m, c) {
  const pressed = Boolean(feedbackOf(m, c.source_id));
  return el("button", { type: "button", class: "btn btn-ghost btn-sm source-feedback-btn", "aria-pressed": String(pressed),
    "aria-label": gettext("This source did not help"), dataset: { message: m.id, source: c.source_id },
    title: pressed ? gettext("Marked as not helpful — press again to withdraw") : gettext("This source did not help") }, icon("thumbs-down"));
}

function sourceItem(c, label, ranks, m = null) {
  const href = citeHref(c);
  const where = whereLabel(c);
  const similarity = rankText(c, ranks);
  return el("li", { class: m ? "source-cited" : null }, m && m.status === "done" ? sourceFeedback(m, c) : null,
    el(href ? "a" : "div", { class: "source", href },
    el("div", { class: "source-top" },
      label ? el("span", { class: "source-num" }, label) : null,
      el("span", { class: "source-name" }, sourceName(c)),
      similarity ? el("span", { class: "source-score", title: gettext("Its rank among the passages found for the question (1: the closest)") }, similarity) : null,
      c.expired ? el("span", { class: "source-outdated", title: gettext("The document's validity date has passed") },
        gettext("may be outdated")) : null,
      c.superseded ? el("span", { class: "source-outdated", title: gettext("The document has a newer version than the one quoted") },
        gettext("superseded version")) : null),
    el("div", { class: "source-where" }, labelChip(c), where ? ` ${where.charAt(0).toUpperCase() + where.slice(1)}` : ""),
    el("div", { class: "source-snippet md" }, renderMarkdown(c.snippet))));
}

/** Cited sources first (numbered as in the answer), then the other passages given to the model, collapsed. */
export function showSources(messageId) {
  const m = messages.get(messageId);
  if (!m) return;
  const cites = citationsOf(m);
  panel.dataset.message = messageId;
  panelTitle.textContent = count(ngettext("%(n)s source", "%(n)s sources", cites.numbers.size), cites.numbers.size);
  panelList.replaceChildren();
  // A follow-up searched with the conversation's earlier words: say what was searched.
  const rewrite = m.metadata && m.metadata.query_rewrite;
  if (rewrite && rewrite.query && rewrite.original && rewrite.query.trim() !== rewrite.original.trim()) {
    panelList.append(el("li", { class: "sources-searched-as muted" }, fill(gettext("Searched as: %(query)s"), { query: rewrite.query })));
  }
  // The passages were given to the model best first (S1, S2, …): their order is the rank.
  const given = (m.metadata && m.metadata.context_sources) || [];
  const ranks = new Map(given.map((s, i) => [s.source_id, i + 1]));
  for (const [tag, n] of cites.numbers) panelList.append(sourceItem(cites.byTag.get(tag), `[${n}]`, ranks, m));
  const others = given.filter((s) => !cites.numbers.has(s.source_id));
  if (others.length) {
    const list = el("ol", { class: "sources-other" });
    for (const s of others) list.append(sourceItem({ ...s, snippet: s.preview }, null, ranks));
    panelList.append(el("li", { class: "sources-more" }, el("details", {},
      el("summary", {}, count(ngettext("%(n)s other passage retrieved, not cited", "%(n)s other passages retrieved, not cited", others.length), others.length)), list)));
  }
}

export function toggleSources(messageId, button) {
  const open = !panel.hidden && Number(panel.dataset.message) === messageId;
  for (const b of document.querySelectorAll(".sources-btn")) b.setAttribute("aria-expanded", "false");
  if (open) { closeSources(); return; }
  showSources(messageId);
  panel.hidden = false;
  button.setAttribute("aria-expanded", "true");
  panelOpener = button;
  panel.focus();
}

function closeSources() {
  panel.hidden = true;
  for (const b of document.querySelectorAll(".sources-btn")) b.setAttribute("aria-expanded", "false");
  if (panelOpener && document.body.contains(panelOpener)) panelOpener.focus();
  panelOpener = null;
}
document.getElementById("sources-close").addEventListener("click", closeSources);
panel.addEventListener("keydown", (e) => { if (e.key === "Escape") closeSources(); });

function showPreview(target) {
  const m = messages.get(Number(target.dataset.message));
  if (!m) return;
  const cites = citationsOf(m);
  const c = cites.byTag.get(target.dataset.tag);
  if (!c) return;
  const where = whereLabel(c);
  preview.replaceChildren(...[
    el("div", { class: "p-doc" }, `[${cites.numbers.get(target.dataset.tag)}] ${sourceName(c)}`),
    where ? el("div", { class: "p-where" }, where.charAt(0).toUpperCase() + where.slice(1)) : null,
    el("div", { class: "p-snippet md" }, renderMarkdown(c.snippet))].filter(Boolean));
  preview.hidden = false;
  const r = target.getBoundingClientRect();
  const w = preview.offsetWidth;
  const h = preview.offsetHeight;
  const left = Math.min(Math.max(8, r.left + r.width / 2 - w / 2), window.innerWidth - w - 8);
  const top = r.bottom + 8 + h < window.innerHeight ? r.bottom + 8 : Math.max(8, r.top - h - 8);
  preview.style.left = `${left}px`;
  preview.style.top = `${top}px`;
  target.setAttribute("aria-describedby", "preview");
}
function hidePreview(target) {
  preview.hidden = true;
  if (target) target.removeAttribute("aria-describedby");
}
thread.addEventListener("mouseover", (e) => { const t = e.target.closest(".cite"); if (t) showPreview(t); });
thread.addEventListener("mouseout", (e) => { const t = e.target.closest(".cite"); if (t) hidePreview(t); });
thread.addEventListener("focusin", (e) => { const t = e.target.closest(".cite"); if (t) showPreview(t); });
thread.addEventListener("focusout", (e) => { const t = e.target.closest(".cite"); if (t) hidePreview(t); });
document.addEventListener("keydown", (e) => { if (e.key === "Escape" && !preview.hidden) hidePreview(); });
scroller.addEventListener("scroll", () => { if (!preview.hidden) hidePreview(); }, { passive: true });
