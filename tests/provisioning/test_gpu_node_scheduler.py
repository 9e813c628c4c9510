"""Two schedulers must not hand out the same GPUs (reference corrections, item 8). Given gpu-east, whose GPU nodes
Volcano schedules, when an engineer previews inference (no gang), then its pods use Volcano and the team's queue,
unless the platform team declares that Volcano has GPU nodes of its own."""
from __future__ import annotations

import pytest

from intake.decisions import Decision
from provisioning.models import Cluster

pytestmark = pytest.mark.django_db


def _pod_spec(response):
    assert response.status_code == 200, response.json()
    (deployment,) = [o for o in response.json()["manifests"] if o["kind"] == "Deployment"]
    return deployment["spec"]["template"]


def test_inference_on_a_volcano_cluster_is_scheduled_by_volcano_in_the_teams_queue(api, engineer, team_a, inventory,
                                                                                  valid_answers):
    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "answers": valid_answers},
                                  format="json")

    assert Decision.from_json(response.json()["decision"]).cluster == "gpu-east" and Decision.from_json(response.json()["decision"]).gang is None
    template = _pod_spec(response)
    assert template["spec"]["schedulerName"] == "volcano"
    assert template["metadata"]["annotations"]["scheduling.volcano.sh/queue-name"] == "gpu-team-a"
    queues = [o for o in response.json()["manifests"] if o["kind"] == "Queue"]
    assert [q["metadata"]["name"] for q in queues] == ["gpu-team-a"]  # the queue the pods name is rendered too


def test_a_cluster_can_declare_that_its_gang_scheduler_does_not_own_the_gpu_nodes(api, engineer, team_a, inventory,
                                                                                 valid_answers, platform_user):
    Cluster.objects.filter(name="gpu-east").update(gang_scheduler_owns_gpu_nodes=False)

    template = _pod_spec(api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "answers": valid_answers},
                                            format="json"))

    assert "schedulerName" not in template["spec"]
    clusters = api(platform_user).get("/api/v1/clusters/").json()
    east = next(c for c in (clusters.get("results", clusters)) if c["name"] == "gpu-east")
    assert east["gang_scheduler_owns_gpu_nodes"] is False
