"""Admin lists that only a live cluster fills say why they are empty in the demo, instead of just "0 items"."""
import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


# (Stalled-gang notices are portal notices now, listed under Portal > Notices with the other notices.)
@pytest.mark.parametrize("url", ["/admin/provisioning/node/", "/admin/provisioning/gangstall/",
                                 "/admin/provisioning/clusterreconcilestate/"])
def test_an_empty_live_only_list_says_why(platform_user, inventory, url):
    client = Client()
    client.force_login(platform_user)
    html = client.get(url).content.decode()
    assert 'data-testid="empty-why"' in html and "gpu-west, a GitOps repository with no API server, never" in html

