"""Which accounts and groups belong to a directory (OpenID Connect provider or LDAP)."""
from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.utils.translation import gettext_lazy as _


class DirectorySource(models.TextChoices):
    OIDC = "oidc", _("OpenID Connect")
    LDAP = "ldap", _("LDAP")


class DirectoryIdentity(models.Model):
    """A user account created by (and only ever matched to) one directory subject.

    OpenID Connect: `subject` is the provider's `sub`; LDAP: the directory user name. A local
    account is never matched by e-mail or name: sign-in refuses a name a local account holds.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="directory_identities", verbose_name=_("user"))
    source = models.CharField(max_length=10, choices=DirectorySource.choices, verbose_name=_("source"))
    subject = models.CharField(max_length=255, verbose_name=_("subject"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("directory identity")
        verbose_name_plural = _("directory identities")
        constraints = [
            models.UniqueConstraint(fields=["source", "subject"], name="directory_identity_unique_subject"),
            models.CheckConstraint(condition=models.Q(source__in=DirectorySource.values),
                                   name="directory_identity_source_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.source}:{self.subject}"


class DirectoryGroup(models.Model):
    """A Django group whose membership a directory manages: sign-in and re-checks add and remove
    members. Groups never named by the directory are left alone."""

    group = models.OneToOneField(Group, on_delete=models.CASCADE, related_name="directory", verbose_name=_("group"))
    source = models.CharField(max_length=10, choices=DirectorySource.choices, verbose_name=_("source"))

    class Meta:
        verbose_name = _("directory group")
        verbose_name_plural = _("directory groups")
        constraints = [
            models.CheckConstraint(condition=models.Q(source__in=DirectorySource.values),
                                   name="directory_group_source_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.source}:{self.group_id}"


class LanguageChoice(models.Model):
    """The language a user chose for the pages (the switcher); without a row, the browser's."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="language_choice",
                                verbose_name=_("user"))
    # No choices: adding a language to settings.LANGUAGES needs no migration (checked by the service).
    language = models.CharField(_("language"), max_length=10)
    changed_at = models.DateTimeField(_("changed at"), auto_now=True)

    class Meta:
        verbose_name = _("language choice")
        verbose_name_plural = _("language choices")

    def __str__(self) -> str:
        return f"{self.user_id}:{self.language}"
