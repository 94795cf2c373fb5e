"""Group sync on the database: which groups a directory adds and removes."""
from __future__ import annotations

import pytest

from identity.rules import GroupRule
from identity.services import directory_groups_sync

pytestmark = pytest.mark.django_db


def test_sync_adds_marks_and_removes_only_managed_groups(user):
    from django.contrib.auth.models import Group

    local = Group.objects.create(name="staff-picked")
    ldap_group = Group.objects.create(name="from-ldap")
    user.groups.add(local, ldap_group)
    directory_groups_sync(user=user, source="ldap", directory_names=["from-ldap"], rule=GroupRule())

    added, removed = directory_groups_sync(user=user, source="oidc", directory_names=["sso-a", "x" * 151],
                                           rule=GroupRule())
    assert added == {"sso-a"} and removed == set()  # the too-long name is skipped, the others sync
    assert Group.objects.get(name="sso-a").directory.source == "oidc"
    assert not Group.objects.filter(name="x" * 151).exists()

    added, removed = directory_groups_sync(user=user, source="oidc", directory_names=[], rule=GroupRule())
    # Only the group OIDC manages goes; LDAP's group and the local group stay.
    assert removed == {"sso-a"}
    assert set(user.groups.values_list("name", flat=True)) == {"staff-picked", "from-ldap"}
