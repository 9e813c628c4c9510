from portal.api.routers import PortalRouter

from . import request_views, views

router = PortalRouter()
router.register("clusters", views.ClusterViewSet, basename="cluster")
# /requests/{id}/manifests/, /fit/, /wait/: beside intake's request routes, under the same names (request-fit...).
router.register("requests", request_views.RequestProvisioningViewSet, basename="request")
urlpatterns = router.urls
