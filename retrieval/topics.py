"""Topics (category / subcategory) a question can be asked under: the ones actually in use.

A topic is only useful when something answers under it, so the picker and the validation of
`POST/PATCH /api/conversations/` offer exactly the categories and subcategories that live
approved Q&A pairs and the documents the user reads carry, plus both sides of the subcategory
mappings (a mapping joins the category its other side is used in). Free text is refused:
a misspelt topic would silently skip every tier.
"""
from __future__ import annotations

from collections import defaultdict

from core.errors import ApplicationError
from documents.models import Collection, Document
from retrieval.models import KnowledgeEntry, SubcategoryMapping


class TopicInvalid(ApplicationError):
    code = "invalid_topic"


def topics_for(*, user) -> list[dict]:
    """[{"category", "subcategories": [...]}] in use for this user, sorted; category "" holds
    subcategories used without a category."""
    pairs: set[tuple[str, str]] = set()
    pairs.update(KnowledgeEntry.objects.live().values_list("category", "subcategory").distinct())
    pairs.update(Document.objects.visible_to(user).values_list("category", "subcategory").distinct())
    pairs.update(Collection.objects.readable_by(user).values_list("category", "subcategory").distinct())
    by_category: dict[str, set[str]] = defaultdict(set)
    for category, subcategory in pairs:
        category, subcategory = (category or "").strip(), (subcategory or "").strip()
        if not category and not subcategory:
            continue
        subs = by_category[category]
        if subcategory:
            subs.add(subcategory)
    # A mapping's general subcategory is where tier 3 looks: offer it beside its specific one, and the
    # specific one beside its general one, in every category where either is in use.
    for specific, general in SubcategoryMapping.objects.values_list("subcategory", "general_subcategory"):
        for subs in by_category.values():
            if specific in subs or general in subs:
                subs.update({specific, general})
    return [{"category": category, "subcategories": sorted(subs)}
            for category, subs in sorted(by_category.items())]


def topic_validate(*, user, category: str | None, subcategory: str | None) -> tuple[str, str]:
    """(category, subcategory) stripped, if both are in use (topics_for); raise TopicInvalid otherwise."""
    category, subcategory = (category or "").strip(), (subcategory or "").strip()
    if not category and not subcategory:
        return "", ""
    topics = {t["category"]: set(t["subcategories"]) for t in topics_for(user=user)}
    if category and category not in topics:
        raise TopicInvalid(f"'{category}' is not a category in use. Choose one of the topics listed by "
                           "GET /api/topics/.", extra={"field": "category", "categories": sorted(c for c in topics if c)})
    if subcategory:
        allowed = topics[category] if category else set().union(*topics.values()) if topics else set()
        if subcategory not in allowed:
            where = f"of the category '{category}'" if category else "in use"
            raise TopicInvalid(f"'{subcategory}' is not a subcategory {where}. Choose one of the topics listed by "
                               "GET /api/topics/.", extra={"field": "subcategory", "subcategories": sorted(allowed)})
    return category, subcategory
