from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from ragsite import views
from core.throttles import LimitedAdminAuthenticationForm, ThrottledLoginView
from identity.language import set_language_view
from identity.tokens_api import (
    ApiTokenDetailView, ApiTokenListView, ApiTokenRotateView, ObtainTokenView, TokenRotateView,
)
from identity.views import DirectoryLogoutView, api_tokens_page
from usage.api import UsageView

# The admin's own login form had no limit at all: the sign-in limits of the login page apply there too.
admin.site.login_form = LimitedAdminAuthenticationForm

api_patterns = [
    path("auth/token/", ObtainTokenView.as_view(), name="api-token"),
    path("auth/token/rotate/", TokenRotateView.as_view(), name="api-token-rotate"),
    path("auth/tokens/", ApiTokenListView.as_view(), name="api-tokens"),
    path("auth/tokens/<int:token_id>/", ApiTokenDetailView.as_view(), name="api-token-detail"),
    path("auth/tokens/<int:token_id>/rotate/", ApiTokenRotateView.as_view(), name="api-token-detail-rotate"),
    path("me/", views.MeView.as_view(), name="api-me"),
    path("usage/", UsageView.as_view(), name="api-usage"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its start-up script as a file: no inline script under the CSP.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include("documents.urls")),
    path("", include("retrieval.urls")),
    path("", include("chat.urls")),
    path("", include("sources.urls")),
]

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", views.metrics, name="metrics"),
    path("admin/", admin.site.urls),
    # gettext(), ngettext() and interpolate() for the pages' scripts (locale/<code>/LC_MESSAGES/djangojs.po).
    path("jsi18n/", JavaScriptCatalog.as_view(), name="javascript-catalog"),
    # The language switcher (user menu, sign-in page): Django's set_language, saved for a signed-in user.
    path("i18n/setlang/", set_language_view, name="set_language"),
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", DirectoryLogoutView.as_view(), name="logout"),
    path("accounts/tokens/", api_tokens_page, name="api-tokens-page"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include(api_patterns)),
    path("", include("integrations.urls")),  # /v1/: the OpenAI-compatible API
    # End-user pages (each app's templates/): the library and document viewer, conversations and chat.
    path("", include("documents.page_urls")),
    path("", include("chat.page_urls")),
]

if settings.OIDC_ENABLED:  # /oidc/authenticate/, /oidc/callback/ (docs/identity.md)
    urlpatterns.append(path("", include("identity.urls")))

handler404 = "ragsite.views.not_found"
handler500 = "ragsite.views.server_error"
