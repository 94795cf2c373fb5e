from rest_framework.routers import SimpleRouter

from documents.api import DocumentViewSet

router = SimpleRouter()
router.register("documents", DocumentViewSet, basename="document")
urlpatterns = router.urls
