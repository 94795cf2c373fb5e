"""DRF permissions shared by the apps' APIs."""
from __future__ import annotations

from rest_framework.permissions import BasePermission


def staff_with(*permissions: str) -> type[BasePermission]:
    """Active staff holding any of the Django `permissions` (superusers hold every one): the same rule the
    admin applies to the page an API mirrors. Anyone else gets 403 (401 when not signed in)."""

    class StaffWithPermission(BasePermission):
        def has_permission(self, request, view) -> bool:
            user = request.user
            return bool(user and user.is_active and user.is_staff
                        and any(user.has_perm(permission) for permission in permissions))

    StaffWithPermission.__name__ = "StaffWith_" + "_or_".join(p.replace(".", "_") for p in permissions)
    return StaffWithPermission
