"""Change the test provider from the tests (one subprocess per call):

    python -m tests.oidc_provider.cli migrate
    python -m tests.oidc_provider.cli client CLIENT_ID SECRET REDIRECT_URI POST_LOGOUT_URI
    python -m tests.oidc_provider.cli user NAME PASSWORD EMAIL [GROUP,GROUP]
    python -m tests.oidc_provider.cli deactivate NAME
"""
import os
import sys

os.environ["DJANGO_SETTINGS_MODULE"] = "tests.oidc_provider.settings"


def main(argv: list[str]) -> None:
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from oauth2_provider.models import Application

    command, args = argv[0], argv[1:]
    if command == "migrate":
        call_command("migrate", verbosity=0, interactive=False)
    elif command == "client":
        client_id, secret, redirect_uri, post_logout = args
        Application.objects.filter(client_id=client_id).delete()
        Application.objects.create(
            name="ragsite", client_id=client_id, client_secret=secret, redirect_uris=redirect_uri,
            post_logout_redirect_uris=post_logout, client_type=Application.CLIENT_CONFIDENTIAL,
            authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE, skip_authorization=True,
            algorithm=Application.RS256_ALGORITHM)
    elif command == "user":
        name, password, email = args[:3]
        groups = [g for g in (args[3] if len(args) > 3 else "").split(",") if g]
        user, _ = User.objects.get_or_create(username=name)
        user.set_password(password)
        user.email, user.is_active = email, True
        user.save()
        user.groups.set([Group.objects.get_or_create(name=g)[0] for g in groups])
    elif command == "deactivate":
        User.objects.filter(username=args[0]).update(is_active=False)
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
