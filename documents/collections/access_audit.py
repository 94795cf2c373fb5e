"""Who may read a collection is a permission: its changes go to the audit log (identity/audit.py).

Its reader groups (added, removed, cleared) and the fields that decide access — visibility, active or
not, the curator group — each leave one line naming the collection, the change and (through the audit
middleware) who made it. Connected in documents/apps.py.
"""
from __future__ import annotations

from identity.audit import audit_record
from identity.models import AuditAction

ACCESS_FIELDS = ("visibility", "is_active", "curator_group_id")


def on_readers_changed(sender, instance, action, reverse, model, pk_set, **kwargs) -> None:
    """Collection.groups: which groups read it."""
    if action not in ("post_add", "post_remove", "post_clear"):
        return
    if reverse:  # group.readable_collections.add(collection): `instance` is the group
        from documents.models import Collection

        collections = Collection.objects.filter(pk__in=pk_set or []).only("pk", "name")
        for collection in collections:
            _record(collection, {"change": action[5:], "groups": [str(instance)]})
        return
    names = sorted(str(g) for g in model.objects.filter(pk__in=pk_set or [])) if pk_set else []
    _record(instance, {"change": action[5:], "groups": names})


def remember_access(sender, instance, raw=False, **kwargs) -> None:
    """Before a save: the access fields as stored, to tell what the save changes."""
    if raw:  # fixtures and the test database's restore write rows as they were: no change to record
        return
    if instance.pk is None:
        instance._access_before = None
        return
    instance._access_before = (type(instance).objects.filter(pk=instance.pk).values(*ACCESS_FIELDS).first())


def on_access_saved(sender, instance, created, raw=False, **kwargs) -> None:
    if raw:
        return
    before = getattr(instance, "_access_before", None)
    if created or before is None:
        _record(instance, {"change": "create", **{f: _plain(getattr(instance, f)) for f in ACCESS_FIELDS}})
        return
    changed = {f: [_plain(before[f]), _plain(getattr(instance, f))] for f in ACCESS_FIELDS
               if before[f] != getattr(instance, f)}
    if changed:
        _record(instance, {"change": "update", "changed": changed})


def _plain(value):
    return value if value is None or isinstance(value, (bool, int, str)) else str(value)


def _record(collection, detail: dict) -> None:
    audit_record(action=AuditAction.PERMISSIONS,
                 detail={"collection_id": collection.pk, "collection": collection.name, **detail})
