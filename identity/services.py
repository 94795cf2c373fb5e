"""Changes identity makes: directory accounts and their group memberships."""
from __future__ import annotations

import logging

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction

from identity.models import ApiToken, DirectoryGroup, DirectoryIdentity
from identity.rules import GroupRule

log = logging.getLogger(__name__)


class LocalAccountConflict(Exception):
    """A directory sign-in names a user name a local (or other directory's) account holds."""


def directory_user_get_or_create(*, source: str, subject: str, username: str, email: str = ""):
    """The account of this directory subject, created on first sign-in.

    Never adopts an existing account by e-mail or name: when `username` is taken by an account
    that is not this subject's, raises LocalAccountConflict (an administrator links them by hand).
    """
    User = get_user_model()
    with transaction.atomic():
        identity = DirectoryIdentity.objects.select_related("user").filter(source=source, subject=subject).first()
        if identity is not None:
            return identity.user
        if not username:
            raise LocalAccountConflict("the directory gave no user name")
        if User.objects.filter(username__iexact=username).exists():
            raise LocalAccountConflict(f"the user name {username!r} belongs to another account")
        user = User.objects.create_user(username=username, email=email or "")
        DirectoryIdentity.objects.create(user=user, source=source, subject=subject)
        return user


def tokens_revoke_all(*, user_id: int) -> int:
    """End every API token of the user; how many there were (identity/tokens.py has the rest)."""
    deleted, _count = ApiToken.objects.filter(user_id=user_id).delete()
    return deleted


def directory_user_deactivate(*, user_id: int) -> None:
    """The directory no longer has this user: the account stops (sessions, API tokens, sign-in)
    until staff re-activate it."""
    with transaction.atomic():
        get_user_model().objects.filter(pk=user_id).update(is_active=False)  # (no pre_save signal: ended here)
        tokens_revoke_all(user_id=user_id)


def directory_groups_sync(*, user, source: str, directory_names, rule: GroupRule) -> tuple[set[str], set[str]]:
    """Make the user's managed groups exactly those the directory names, through `rule`.

    Adds the user to each wanted group (created if missing, then marked as managed by `source`) and
    removes them from managed groups the directory no longer names. A group is managed when this
    source created or filled it before, or the rule's mapping or prefix names it; other local groups
    are never touched. Returns (added, removed) group names.
    """
    wanted = set()
    for name in rule.django_names(directory_names):
        if len(name) > 150:  # Django's limit for a group name: a clear log line, the other groups still sync
            log.warning("directory group name longer than 150 characters skipped: %.60s…", name)
        else:
            wanted.add(name)
    with transaction.atomic():
        current = {g.name: g for g in user.groups.select_related("directory")}
        added: set[str] = set()
        for name in sorted(wanted):
            group, _ = Group.objects.get_or_create(name=name)
            DirectoryGroup.objects.get_or_create(group=group, defaults={"source": source})
            if name not in current:
                user.groups.add(group)
                added.add(name)
        removed: set[str] = set()
        for name, group in current.items():
            if name in wanted:
                continue
            try:
                marked = group.directory
            except DirectoryGroup.DoesNotExist:
                marked = None
            if (marked is not None and marked.source == source) or rule.manages(name):
                user.groups.remove(group)
                removed.add(name)
    if added or removed:
        log.info("directory groups of %s (%s): +%s -%s", user.username, source, sorted(added), sorted(removed))
    return added, removed
