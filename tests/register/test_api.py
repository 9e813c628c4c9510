"""The register over HTTP: `GET /api/v1/register/` (JSON, `?format=md`) and the `/register/` page are the platform
team's; bad input names the field; the number of queries does not grow with requests, nodes, pods or usage."""
from __future__ import annotations

import datetime
import uuid

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chargeback.models import UsageInterval
from intake.models import Rule
from intake.services import policy_version_draft_create
from provisioning.models import Cluster, GangStall
from register.choices import DecisionArea
from register.selectors import register_build
from register.services import driver_upgrade_plan_record, platform_decision_record, platform_decision_sign_off
from kubesim import nodes as k
from tests.register.conftest import INFERENCE, NOTEBOOK, TRAINING, pod_of, sync

pytestmark = pytest.mark.django_db
URL = "/api/v1/register/"
ITEM_KEYS = {"area", "subject", "state", "verdict", "owner", "signed_off_by", "signed_off_at", "rationale",
             "evidence", "notes"}
AREAS = ["sharing_strategy", "scheduling_model", "gang_scheduling", "tenant_isolation", "driver_lifecycle",
         "chargeback_coverage", "preemption"]


def test_only_the_platform_team_reads_the_register(api, inventory, engineer, finance_user, platform_user):
    for path in (URL, f"{URL}?format=md"):
        assert api().get(path).status_code == 401
        assert api(engineer).get(path).status_code == 403
        assert api(finance_user).get(path).status_code == 403
        assert api(platform_user).get(path).status_code == 200


def test_the_json_register(api, inventory, platform_user):
    body = api(platform_user).get(URL).json()

    assert set(body) == {"generated_at", "window", "policy_version", "counts", "sections"}
    assert body["window"]["days"] == 30 and body["policy_version"] == 1
    assert [s["area"] for s in body["sections"]] == AREAS
    for section in body["sections"]:
        assert set(section) == {"area", "title", "counts", "summary", "notes", "items"}
        assert all(set(i) == ITEM_KEYS and i["area"] == section["area"] for i in section["items"])
        assert all(i["verdict"] in ("decided", "inherited", "conflict") for i in section["items"])
    assert body["counts"] == {v: sum(s["counts"][v] for s in body["sections"])
                              for v in ("decided", "inherited", "conflict")}
    assert api(platform_user).get(URL, {"days": 7}).json()["window"]["days"] == 7


def test_the_markdown_export(api, inventory, platform_user):
    for response in (api(platform_user).get(URL, {"format": "md"}),
                     api(platform_user).get(URL, HTTP_ACCEPT="text/markdown")):
        assert response.status_code == 200 and response["Content-Type"] == "text/markdown; charset=utf-8"
        text = response.content.decode()
        assert text.startswith("# Platform decision register\n")
        assert "## 6. Chargeback coverage" in text


@pytest.mark.parametrize("query, field, message", [
    ({"format": "xlsx"}, "format", "One of json, md."),
    ({"format": ""}, "format", "Give a format (for example json or yaml) or leave it out."),
    ({"days": "0"}, "days", "Ensure this value is greater than or equal to 1."),
    ({"days": "366"}, "days", "Ensure this value is less than or equal to 365."),
    ({"days": "a week"}, "days", "A valid integer is required."),
    # Not integers in the schema's sense, though DRF's own field would take them (found by the API fuzzer).
    ({"days": "30.0"}, "days", "A valid integer is required."),
    ({"days": " 7"}, "days", "A valid integer is required."),
    ({"days": "０７"}, "days", "A valid integer is required."),
])  # fmt: skip
def test_bad_input_is_a_400_naming_the_field(api, inventory, platform_user, query, field, message):
    response = api(platform_user).get(URL, query)
    assert response.status_code == 400 and response.json() == {field: [message]}


def test_the_page_is_for_the_platform_team_with_badges_and_a_nav_link(inventory, engineer, platform_user):
    client = Client()
    assert client.get("/register/").status_code == 302  # to the login page
    client.force_login(engineer)
    assert client.get("/register/").status_code == 403
    assert "Decision register" not in client.get("/requests/").content.decode()
    client.force_login(platform_user)

    page = client.get("/register/").content.decode()

    assert "Decision register</a>" in page  # the nav link
    assert all(f'data-testid="section-{area}"' in page for area in AREAS)
    assert '<span class="verdict verdict-decided">decided</span>' in page
    assert '<span class="verdict verdict-inherited">inherited</span>' in page
    assert "gpu-east/h100-train" in page and "route inference-shared-latency" in page
    assert "days: A whole number of days from 1 to 365." in client.get("/register/", {"days": "x"},
                                                                       follow=True).content.decode()


def test_the_page_shows_drafts_awaiting_review_and_migration_previews(inventory, engineer, team_a, place,
                                                                     platform_user):
    place(engineer, team_a, "chat", INFERENCE)
    draft = policy_version_draft_create(user=platform_user, notes="inference on whole GPUs")
    Rule.objects.filter(version=draft, key="inference-shared-latency").update(outcome={"strategy": "whole_gpu"})
    client = Client()
    client.force_login(platform_user)

    page = client.get("/register/").content.decode()

    assert 'data-testid="draft-2"' in page and f"/admin/intake/policyversion/{draft.pk}/review/" in page
    assert 'data-testid="preview-gpu-east/h200-mig"' in page and "ResourceClaimTemplate/gpu-team-a/chat-r" in page


def _bigger(users, teams, place, platform_user, scale: int):
    """Add `scale` more of everything the register reads row by row: requests (live, pending, stalled gangs),
    nodes with pods, usage intervals."""
    engineer, engineer_b = users
    team_a, team_b = teams
    now = timezone.now()
    made = []
    for i in range(scale):
        made.append(place(engineer, team_a, f"chat-{scale}-{i}", INFERENCE))
        made.append(place(engineer_b, team_b, f"nb-{scale}-{i}", NOTEBOOK))
        gang = place(engineer, team_a, f"gang-{scale}-{i}", {**TRAINING, "replicas": 2, "min_driver_major": 560})
        GangStall.objects.create(request=gang, cluster=Cluster.objects.get(name="gpu-east"), workload_class="training",
                                 started_at=now, detected_at=now, segment_started_at=now, running_pods=1,
                                 pending_pods=1, gpu_equivalents_running=8)
        place(engineer, team_a, f"wait-{scale}-{i}", {**INFERENCE, "tenancy": "dedicated"}, "pending_approval")
        made.append(gang)
    nodes = [k.l40s_shared_node(f"gpu-l40s-{i}") for i in range(scale * 2)]
    nodes += [k.h100_node(f"gpu-h100-{i}") for i in range(scale * 2)]
    pods = [pod_of(r, f"{r.name}-0", node=f"gpu-l40s-{n % (scale * 2)}", resources={"nvidia.com/gpu.shared": 1})
            for n, r in enumerate(made) if r.strategy == "time_slicing"]
    pods += [pod_of(r, f"{r.name}-0", node=f"gpu-h100-{n % (scale * 2)}", resources={"nvidia.com/gpu": 8})
             for n, r in enumerate(made) if r.strategy == "whole_gpu"]
    sync("gpu-east", nodes=nodes, pods=pods)
    for r in made:
        UsageInterval.objects.create(pod_uid=str(uuid.uuid4()), cluster="gpu-east", request=r, team=r.team,
                                     strategy=r.strategy, gpu_model="H100-80GB", devices=1, equivalents_num=1,
                                     equivalents_den=1, started_at=now - datetime.timedelta(hours=2),
                                     ended_at=now, first_seen_at=now)


def test_the_number_of_queries_does_not_grow_with_requests_nodes_or_usage(
        inventory, engineer, engineer_b, team_a, team_b, place, platform_user):
    east = Cluster.objects.get(name="gpu-east")
    for area, value in ((DecisionArea.SCHEDULING_MODEL, {"scheduling_model": "device_plugin"}),
                        (DecisionArea.DRIVER_LIFECYCLE, {})):
        decision = platform_decision_record(user=platform_user, area=area, cluster=east, value=value,
                                            owner="platform-team", rationale="why")
        platform_decision_sign_off(user=platform_user, decision_id=decision.pk)
    driver_upgrade_plan_record(user=platform_user, cluster=east, target_version="560.35.03",
                               planned_for=timezone.now().date())
    draft = policy_version_draft_create(user=platform_user)
    Rule.objects.filter(version=draft, key="inference-shared-latency").update(outcome={"strategy": "whole_gpu"})

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            register_build()
        return len(queries)

    _bigger((engineer, engineer_b), (team_a, team_b), place, platform_user, 1)
    small = count()
    _bigger((engineer, engineer_b), (team_a, team_b), place, platform_user, 4)
    assert count() == small
    assert small <= 40
