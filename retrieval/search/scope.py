"""What a question may search: the given documents (a conversation's attachments), else the user's
own documents and the collections they read (or one of those collections).

Conversations belong to the chat, a layer above: retrieval never imports it. The one place a
conversation id becomes a Scope here (`scope_for(user, conversation=…)`, used by `GET /api/search/`
and the admin's retrieval test) calls the extension point named by the setting
`CONVERSATION_SCOPE` -- a dotted path to `resolver(user, conversation) -> Scope` (raising NotFound
for a conversation the user may not see); ragsite/settings.py names `chat.selectors.conversation_scope`.
An empty setting means no conversations exist (every conversation id is NotFound). A setting, not
a registration at start-up, so a reader finds the edge where every other piece of wiring is, and
a test can swap it with `override_settings`. (The search API itself stays here: it is retrieval's
view of "what the chat would retrieve", and the admin's retrieval test page needs the same edge.)

Every query here runs as the `ragsite_reader` role with the user's id set for the transaction,
so PostgreSQL's row-level security hides every row the user may not read (computed there from
their groups) even from a query that forgot its filter. The filter is in the SQL as well.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Callable

from django.utils.translation import gettext
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils.module_loading import import_string

from core.errors import NotFound

READER_ROLE = "ragsite_reader"


@contextmanager
def reader_transaction(user):
    """A transaction in which SQL sees only `user`'s documents, chunks and vectors.

    One round trip in, none out when it is the outermost transaction (COMMIT ends SET LOCAL):
    retrieve() opens two, and their eight statements were a fifth of a question's search time.
    """
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        with connection.cursor() as cursor:  # SET LOCAL ROLE ...; SET LOCAL ragsite.user_id ...
            cursor.execute("SELECT set_config('role', %s, true), set_config('ragsite.user_id', %s, true)",
                           [READER_ROLE, str(int(user.pk))])
        yield
        # Inside an outer transaction (tests, callers' atomic blocks) SET LOCAL would outlive this
        # block; put the session back explicitly. After an error there is nothing to put back: the
        # rollback (of the transaction or its savepoint) undoes both settings, and a statement now
        # would only hide the error behind "current transaction is aborted".
        if not outermost and connection.connection is not None and not connection.needs_rollback:
            with connection.cursor() as cursor:
                cursor.execute("SELECT set_config('role', 'none', true), set_config('ragsite.user_id', '', true)")


@dataclass
class ModelGroup:
    """Documents in scope whose vectors live in one embedding model."""

    model_id: int | None
    model_name: str
    dim: int | None
    server_id: int | None
    document_ids: list[int] = field(default_factory=list)  # empty unless asked for (model_groups)
    chunks: int = 0
    documents: int = 0


@dataclass
class Scope:
    """What one retrieval searches.

    kind "all": the user's own documents and every active document of the collections in
    `collection_ids`; "collection": only `collection_ids` (one collection); "attached": the given
    documents. `collection_ids` None means every collection the user reads, resolved when the search
    starts (`with_collections`); a list only ever narrows: the row-level security policy decides, in
    the search's own transaction, what the user reads.

    Retrieval knows documents, not conversations: the chat works out a conversation's attached
    documents (and its collection) and hands them over as a Scope (chat.selectors.conversation_scope);
    the search API and the admin's test page reach that through the `CONVERSATION_SCOPE` setting (above).
    """

    kind: str  # "attached" | "all" | "collection"
    conversation_id: int | None = None  # recorded in the trace and the logs only
    attached_ids: list[int] | None = None  # None unless kind == "attached"
    not_indexed: list[int] = field(default_factory=list)
    include_own: bool = True
    collection_ids: list[int] | None = None
    collections: list[dict] = field(default_factory=list)  # [{"id", "slug", "name"}] for the trace
    # Expired documents whose policy is "leave retrieval" (documents.governance): never searched.
    retired_ids: list[int] = field(default_factory=list)


ALL = Scope("all")

ConversationScope = Callable[[object, object], Scope]


def conversation_scope_resolver() -> ConversationScope | None:
    """The extension point `settings.CONVERSATION_SCOPE` (a dotted path), or None when it is empty."""
    path = getattr(settings, "CONVERSATION_SCOPE", "")
    return import_string(path) if path else None


def scope_for(user, *, conversation=None, collection=None) -> Scope:
    """The scope of a conversation (an id or the object), or of one collection the user reads (id or
    slug; it replaces a conversation's own choice unless documents are attached), else everything
    the user reads."""
    if conversation is None:
        return collection_scope(user, collection) if collection is not None else ALL
    resolver = conversation_scope_resolver()
    if resolver is None:  # no chat app: no conversation exists
        raise NotFound(gettext("No such conversation."))
    scope = resolver(user, conversation)
    if collection is not None and scope.kind != "attached":
        return collection_scope(user, collection, conversation_id=scope.conversation_id)
    return scope


def readable_collections(user, ref=None) -> list[dict]:
    """The collections the user reads (or the one `ref` names: id or slug), as PostgreSQL decides."""
    from documents.models import Collection, readable_collections_sql  # noqa: PLC0415 - keeps imports light

    if ref is not None:
        rows = Collection.objects.readable_by(user)
        text = str(ref).strip()
        rows = rows.filter(Q(pk=int(text)) | Q(slug=text)) if text.isascii() and text.isdigit() else rows.filter(slug=text)
        found = list(rows.order_by("-slug").values("id", "slug", "name")[:1])
        if not found:
            raise NotFound(gettext("No such collection."))
        return found
    # Every question reads this (with_collections): as a plain statement of readable_by's own rule (its
    # readable_collections_sql) it costs ~0.1 ms of CPU against the ORM query's ~0.35 ms to build.
    if not user or not user.is_authenticated:
        return []
    rule = readable_collections_sql(user)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, slug, name FROM documents_collection WHERE id IN ({rule.sql}) ORDER BY id",
                       list(rule.params))
        return [{"id": pk, "slug": slug, "name": name} for pk, slug, name in cursor.fetchall()]


def collection_scope(user, ref, *, conversation_id: int | None = None) -> Scope:
    """Only the collection `ref` (id or slug), which the user must read (else NotFound)."""
    collections = readable_collections(user, ref)
    return Scope("collection", conversation_id, None, include_own=False,
                 collection_ids=[c["id"] for c in collections], collections=collections)


def with_collections(user, scope: Scope) -> Scope:
    """The scope with its collections resolved: None becomes every collection the user reads now."""
    if scope.collection_ids is not None:
        return scope
    collections = readable_collections(user)
    return replace(scope, collection_ids=[c["id"] for c in collections],
                   collections=[] if scope.kind == "attached" else collections)


def documents_scope(user, document_ids, *, conversation_id: int | None = None) -> Scope:
    """These documents, those the user reads and active (others are ignored); none of them:
    everything the user reads."""
    from documents.models import Document  # noqa: PLC0415

    wanted = list(dict.fromkeys(int(d) for d in document_ids))
    rows: list = []
    if wanted:
        found = dict(Document.objects.visible_to(user).filter(pk__in=wanted, is_active=True)
                     .values_list("id", "chunk_count"))
        rows = [(d, found[d]) for d in wanted if d in found]
    return scope_of_rows(rows, conversation_id=conversation_id)


def scope_of_rows(rows, *, conversation_id: int | None = None) -> Scope:
    """A scope from (document id, chunk count) pairs already filtered to documents the user reads."""
    if not rows:
        return Scope("all", conversation_id, None)
    return Scope("attached", conversation_id, [r[0] for r in rows], not_indexed=[r[0] for r in rows if not r[1]])


def scope_condition(alias: str, *, owner_id: int, scope: Scope) -> tuple[str, list]:
    """SQL condition (and parameters) for the rows of `alias` (a table with owner_id, collection_id
    and is_active) in the scope's own documents and collections (attached documents: also by their
    ids). Row-level security applies as well: the collection ids can only narrow."""
    own = f"({alias}.collection_id IS NULL AND {alias}.owner_id = %s)"
    shared = f"{alias}.collection_id = ANY(%s)"
    collection_ids = list(scope.collection_ids or [])
    if scope.include_own and collection_ids:
        return f"{alias}.is_active AND ({own} OR {shared})", [owner_id, collection_ids]
    if scope.include_own:
        return f"{alias}.is_active AND {own}", [owner_id]
    return f"{alias}.is_active AND {shared}", [collection_ids]


def model_groups(user, scope: Scope, *, category: str = "", subcategory: str = "",
                 with_ids: bool = True) -> tuple[list[ModelGroup], list[str], int]:
    """Documents in scope (and category), grouped by their pinned embedding model.

    Returns the groups, the text-search configurations present, and the number of documents.
    `with_ids=False` leaves `document_ids` empty: a search of a whole library with one model filters
    by owner and collections alone and needs none. Aggregated before the join and without DISTINCT, so PostgreSQL
    hashes instead of sorting every document (10,000 documents: 9 -> 6 ms). Call inside
    `reader_transaction(user)`.
    """
    condition, params = scope_condition("d", owner_id=user.pk, scope=scope)
    where = [condition, "d.chunk_count > 0"]
    if scope.retired_ids:
        where.append("NOT (d.id = ANY(%s))")
        params.append(scope.retired_ids)
    if scope.attached_ids is not None:
        where.append("d.id = ANY(%s)")
        params.append(scope.attached_ids)
    if category:
        where.append("d.category = %s")
        params.append(category)
    if subcategory:
        where.append("d.subcategory = %s")
        params.append(subcategory)
    ids = "array_agg(d.id)" if with_ids else "NULL::bigint[]"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT m.id, g.embedding_model, g.embedding_dim, g.embedding_server_id, g.text_config, g.ids, g.n, g.chunks
            FROM (SELECT d.embedding_model, d.embedding_dim, d.embedding_server_id, d.text_config,
                         {ids} AS ids, count(*) AS n, sum(d.chunk_count) AS chunks
                  FROM documents_document d
                  WHERE {' AND '.join(where)}
                  GROUP BY d.embedding_model, d.embedding_dim, d.embedding_server_id, d.text_config) g
            LEFT JOIN retrieval_embeddingmodel m ON m.name = g.embedding_model AND m.dim = g.embedding_dim
            ORDER BY m.id NULLS LAST, g.embedding_model, g.embedding_dim, g.embedding_server_id NULLS LAST
            """,
            params,
        )
        rows = cursor.fetchall()
    groups: dict[tuple, ModelGroup] = {}
    configs: set[str] = set()
    documents = 0
    for model_id, name, dim, server_id, config, doc_ids, count, chunks in rows:
        key = (model_id, name, dim)
        group = groups.setdefault(key, ModelGroup(model_id, name, dim, server_id))
        if doc_ids:
            group.document_ids.extend(doc_ids)
        group.documents += count
        group.chunks += int(chunks or 0)
        configs.add(config)
        documents += count
    for group in groups.values():
        group.document_ids.sort()
    return list(groups.values()), sorted(configs), documents
