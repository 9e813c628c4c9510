"""`/metrics` passes `promtool check metrics` (Prometheus' own linter: base units, `_total` counters, help text)
on a real scrape of a portal with requests, jobs and metered usage. promtool comes with Debian's `prometheus`
package (.ci/run installs it)."""
from __future__ import annotations

import shutil
import subprocess
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.portal.test_metrics import TOKEN, metrics_token, scenario  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db


@pytest.fixture
def metered(scenario):  # noqa: F811 - the imported fixture
    """The scenario, plus a cluster with an API server whose pods were read two minutes ago: one two-hour pod of
    eight whole GPUs (usage), so every family of the chargeback collectors has samples."""
    from chargeback.services import usage_ingest
    from provisioning.models import Cluster
    from tests.chargeback.conftest import pod_for

    Cluster.objects.filter(name="gpu-east").update(api_server="https://gpu-east.example:6443", applier="kubernetes")
    now = timezone.now()
    pod = pod_for(scenario["gang"], started_at=now - timedelta(hours=2, minutes=2), devices=8,
                  finished_at=now - timedelta(minutes=2))
    usage_ingest(cluster_name="gpu-east", pods=[pod], now=now - timedelta(minutes=2))
    return scenario


def promtool(exposition: str) -> subprocess.CompletedProcess:
    binary = shutil.which("promtool")
    assert binary, "promtool is missing: apt-get install -y prometheus (.ci/run does)"
    return subprocess.run([binary, "check", "metrics"], input=exposition, capture_output=True, text=True,
                          timeout=60)


def test_a_scrape_with_usage_passes_promtool(client, metered):
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    exposition = response.content.decode()
    assert "gpu_portal_gpu_equivalent_seconds_total{" in exposition  # the usage is there to be checked

    result = promtool(exposition)

    assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), result.stdout + result.stderr


def test_promtool_rejects_hours_as_a_unit():
    """The check is real: the family the portal used to export fails it."""
    result = promtool("# HELP gpu_portal_gpu_equivalent_hours_total GPU-equivalent-hours\n"
                      "# TYPE gpu_portal_gpu_equivalent_hours_total counter\n"
                      'gpu_portal_gpu_equivalent_hours_total{team="a"} 1.0\n')
    assert "hours" in result.stdout + result.stderr
