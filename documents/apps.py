from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DocumentsConfig(AppConfig):
    verbose_name = _("Documents")
    name = "documents"

    def ready(self):
        from django.db.models.signals import m2m_changed, post_save, pre_save

        from documents.collections.access_audit import on_access_saved, on_readers_changed, remember_access
        from documents.models import Collection

        # Who may read a collection is a permission: its changes go to the audit log.
        m2m_changed.connect(on_readers_changed, sender=Collection.groups.through,
                            dispatch_uid="documents-audit-collection-groups")
        pre_save.connect(remember_access, sender=Collection, dispatch_uid="documents-audit-collection-before")
        post_save.connect(on_access_saved, sender=Collection, dispatch_uid="documents-audit-collection-after")
