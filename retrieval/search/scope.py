"""What a question may search: the given documents of the user (a conversation's attachments), else all of the user's own.

Every query here runs as the `ragsite_reader` role with the user's id set for the transaction,
so PostgreSQL's row-level security hides other users' rows even from a query that forgot its
owner filter. The owner filter is in the SQL as well.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable
from dataclasses import dataclass, field

from django.db import connection, transaction

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
    """What one retrieval searches: some of the user's documents, or all of them.

    Retrieval knows documents, not conversations: the chat works out a conversation's attached
    documents and hands them over as a Scope (chat.selectors.conversation_scope); the search API
    and the admin's test page reach that through :func:`register_conversation_scope`.
    """

    kind: str  # "attached" | "all"
    conversation_id: int | None = None  # recorded in the trace and the logs only
    attached_ids: list[int] | None = None  # None when searching all of the user's documents
    not_indexed: list[int] = field(default_factory=list)


ALL = Scope("all")

ConversationScope = Callable[[object, object], Scope]
_conversation_scope: ConversationScope | None = None


def register_conversation_scope(resolver: ConversationScope) -> None:
    """Called by the chat app when it is ready: resolver(user, conversation) -> Scope or NotFound."""
    global _conversation_scope
    _conversation_scope = resolver


def scope_for(user, *, conversation=None) -> Scope:
    """The scope of a conversation (an id or the object) for `user`, else all of the user's documents."""
    if conversation is None:
        return ALL
    if _conversation_scope is None:  # no chat app: no conversation exists
        raise NotFound("No such conversation.")
    return _conversation_scope(user, conversation)


def documents_scope(user, document_ids, *, conversation_id: int | None = None) -> Scope:
    """These documents of the user's (others' are ignored); none of them: all of the user's documents."""
    wanted = list(dict.fromkeys(int(d) for d in document_ids))
    rows: list = []
    if wanted:
        with connection.cursor() as cursor:
            cursor.execute("SELECT d.id, d.chunk_count FROM documents_document d WHERE d.id = ANY(%s) AND d.owner_id = %s",
                           [wanted, user.pk])
            found = dict(cursor.fetchall())
        rows = [(d, found[d]) for d in wanted if d in found]
    return scope_of_rows(rows, conversation_id=conversation_id)


def scope_of_rows(rows, *, conversation_id: int | None = None) -> Scope:
    """A scope from (document id, chunk count) pairs already filtered to the user's documents."""
    if not rows:
        return Scope("all", conversation_id, None)
    return Scope("attached", conversation_id, [r[0] for r in rows], not_indexed=[r[0] for r in rows if not r[1]])


def model_groups(user, scope: Scope, *, category: str = "", subcategory: str = "",
                 with_ids: bool = True) -> tuple[list[ModelGroup], list[str], int]:
    """Documents in scope (and category), grouped by their pinned embedding model.

    Returns the groups, the text-search configurations present, and the number of documents.
    `with_ids=False` leaves `document_ids` empty: a search of a whole library with one model filters
    by owner alone and needs none. Aggregated before the join and without DISTINCT, so PostgreSQL
    hashes instead of sorting every document (10,000 documents: 9 -> 6 ms). Call inside
    `reader_transaction(user)`.
    """
    where = ["d.owner_id = %s", "d.chunk_count > 0"]
    params: list = [user.pk]
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
