"""Per-user scoping: every read of rows a user owns goes through `visible_to` (STYLE, NetBox)."""
from __future__ import annotations

from typing import TypeVar

from django.db import models

_Q = TypeVar("_Q", bound="OwnedQuerySet")


class OwnedQuerySet(models.QuerySet):
    """A queryset of rows with an `owner`: documents, chunks, conversations."""

    owner_field = "owner_id"  # a subclass of rows owned through a relation names the path

    def visible_to(self: _Q, user) -> _Q:
        """Only `user`'s own rows; nothing for an anonymous user. Applied before anything else."""
        if not user or not user.is_authenticated:
            return self.none()
        return self.filter(**{self.owner_field: user.pk})
