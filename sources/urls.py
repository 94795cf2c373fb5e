from rest_framework.routers import SimpleRouter

from sources.api import QuarantineViewSet, SourceViewSet

router = SimpleRouter()
router.register("sources/quarantine", QuarantineViewSet, basename="source-quarantine")
router.register("sources", SourceViewSet, basename="source")
urlpatterns = router.urls
