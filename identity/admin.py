"""Admin: which accounts and groups a directory holds (staff link an existing account to a
directory subject here, the one deliberate way a local account becomes a directory one)."""
from django.contrib import admin

from rest_framework.authtoken.models import TokenProxy

from identity.models import ApiToken, DirectoryGroup, DirectoryIdentity


@admin.register(DirectoryIdentity)
class DirectoryIdentityAdmin(admin.ModelAdmin):
    list_display = ["user", "source", "subject", "created_at"]
    list_filter = ["source"]
    search_fields = ["user__username", "subject"]
    autocomplete_fields = ["user"]


@admin.register(DirectoryGroup)
class DirectoryGroupAdmin(admin.ModelAdmin):
    list_display = ["group", "source"]
    list_filter = ["source"]
    search_fields = ["group__name"]
    autocomplete_fields = ["group"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Staff see and end tokens (never their keys: only digests are stored); users make them."""

    list_display = ["name", "user", "prefix", "created_at", "expires_at", "last_used_at"]
    search_fields = ["user__username", "name", "prefix"]
    readonly_fields = ["user", "name", "prefix", "created_at", "rotated_at", "expires_at", "last_used_at"]
    exclude = ["digest"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


# DRF's own token table is no longer read (its keys were hashed into ApiToken by a migration):
# its admin page would make tokens that never sign in.
if admin.site.is_registered(TokenProxy):
    admin.site.unregister(TokenProxy)
