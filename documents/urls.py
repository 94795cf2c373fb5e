from rest_framework.routers import SimpleRouter

from documents.api import DocumentViewSet
from documents.collections.api import CollectionViewSet

router = SimpleRouter()
router.register("documents", DocumentViewSet, basename="document")
router.register("collections", CollectionViewSet, basename="collection")
urlpatterns = router.urls
