import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create an admin user if there is none (ADMIN_USERNAME / ADMIN_PASSWORD, or a generated password)."

    def handle(self, *args, **options):
        User = get_user_model()
        if User.objects.filter(is_superuser=True).exists():
            return
        username = os.environ.get("ADMIN_USERNAME") or "admin"
        password = os.environ.get("ADMIN_PASSWORD")
        generated = not password
        if generated:
            password = secrets.token_urlsafe(12)
        User.objects.create_superuser(username=username, email="", password=password)
        if generated:
            self.stdout.write(self.style.WARNING(
                "\n  Created the admin user — this password is shown only once:\n"
                f"    user name: {username}\n    password:  {password}\n"
                "  (change it with `python manage.py changepassword " + username + "`)\n"
            ))
        else:
            self.stdout.write(f"Created the admin user {username!r} with ADMIN_PASSWORD.")
