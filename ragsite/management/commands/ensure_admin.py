import os
import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.utils.translation import gettext, gettext_lazy

from core.commands import BaseCommand


@dataclass(frozen=True)
class AdminNotice:
    """What to tell the person starting ragsite about the first admin user; `generated`: the text holds
    a generated password, shown this once (a warning to read, not an ordinary line)."""

    text: str
    generated: bool


def admin_ensure() -> AdminNotice | None:
    """Create the first admin user when there is no superuser (ADMIN_USERNAME, default "admin";
    ADMIN_PASSWORD, else a generated one). Returns what to tell the person starting ragsite, or None
    when an admin existed already."""
    User = get_user_model()
    if User.objects.filter(is_superuser=True).exists():
        return None
    username = os.environ.get("ADMIN_USERNAME") or "admin"
    password = os.environ.get("ADMIN_PASSWORD")
    generated = not password
    if generated:
        password = secrets.token_urlsafe(12)
    User.objects.create_superuser(username=username, email="", password=password)
    if generated:
        return AdminNotice("\n" + gettext(
            "  Created the admin user — this password is shown only once:\n"
            "    user name: %(username)s\n    password:  %(password)s\n"
            "  (change it with `python manage.py changepassword %(username)s`)\n") % {"username": username,
                                                                                  "password": password}, True)
    return AdminNotice(gettext("Created the admin user %(username)r with ADMIN_PASSWORD.") % {"username": username}, False)


class Command(BaseCommand):
    help = gettext_lazy("Create an admin user if there is none (ADMIN_USERNAME / ADMIN_PASSWORD, or a generated password).")

    def handle(self, *args, **options):
        notice = admin_ensure()
        if notice is not None:
            self.stdout.write(self.style.WARNING(notice.text) if notice.generated else notice.text)
