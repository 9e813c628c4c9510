"""The demo keeps working with discovery: its clusters go through the GitOps applier and have no API server, so the
beat's sync skips them with a note and the demo's requests are decided, checked and approved on declared pools."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from intake.models import GpuRequest
from provisioning.models import Cluster
from tests.support.celery_worker import eager

pytestmark = pytest.mark.django_db


def test_demo_clusters_are_skipped_by_discovery_with_a_note():
    call_command("load_demo", stdout=StringIO())
    out = StringIO()

    call_command("sync_inventory", stdout=out)

    assert out.getvalue().splitlines() == [
        "gpu-east: skipped. No API server: gpu-east is provisioned through GitOps repository, so its inventory is "
        "what the platform team declared; discovery skips it.",
        "gpu-west: skipped. No API server: gpu-west is provisioned through GitOps repository, so its inventory is "
        "what the platform team declared; discovery skips it.",
    ]
    from provisioning.tasks import inventory_sync_all

    with eager():
        assert inventory_sync_all.apply().get() == 2  # the beat task does not fail
    assert not Cluster.objects.filter(last_synced_at__isnull=False).exists()
    assert GpuRequest.objects.get(name="chat-serving").status == "approved"
