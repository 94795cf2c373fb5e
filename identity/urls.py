from django.urls import include, path

urlpatterns = [
    # /oidc/authenticate/ (to the provider), /oidc/callback/ (back from it), /oidc/logout/
    path("oidc/", include("mozilla_django_oidc.urls")),
]
