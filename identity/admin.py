"""Admin: which accounts and groups a directory holds (staff link an existing account to a
directory subject here, the one deliberate way a local account becomes a directory one)."""
from django.contrib import admin

from identity.models import DirectoryGroup, DirectoryIdentity


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
