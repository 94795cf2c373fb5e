"""Admin pieces every app's admin may use."""
from __future__ import annotations

from django.contrib import admin


class ReadOnlyModelAdmin(admin.ModelAdmin):
    """A list to read, never changed from the admin: its rows are written by the app's own code (an
    append-only log, counters, groups the app keeps)."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
