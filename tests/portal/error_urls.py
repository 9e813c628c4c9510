"""The portal's URLs plus one page that fails, to see the 500 page the real handler500 serves."""
from django.urls import path

from portal import urls as portal_urls


def broken_page(request):
    raise RuntimeError("a bug in a view")


urlpatterns = [path("broken/", broken_page), *portal_urls.urlpatterns]
handler403 = portal_urls.handler403
handler500 = portal_urls.handler500
