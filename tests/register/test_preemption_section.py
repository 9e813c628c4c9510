"""Section 7, preemption per cluster and workload class, over HTTP: given the shipped policy's signed-off priority
rules, the register shows each cluster's classes as decided where its scheduler holds what the policy says
(gpu-east runs Volcano, which holds training's two-hour minimum runtime), as a conflict where it cannot (gpu-west's
native scheduler has no minimum runtime), and as inherited where work runs on the scheduler's defaults: a class no
signed-off rule covers, or live requests decided before the policy set a priority."""
from __future__ import annotations

import pytest
from django.test import Client

from intake.decisions import Decision
from intake.models import GpuRequest, PolicyVersion, Rule
from intake.services import policy_version_draft_create, policy_version_sign_off
from intake.policy_review import policy_version_diff
from tests.register.conftest import INFERENCE

pytestmark = pytest.mark.django_db
URL = "/api/v1/register/"


def preemption(api, user) -> dict:
    response = api(user).get(URL)
    assert response.status_code == 200
    [section] = [s for s in response.json()["sections"] if s["area"] == "preemption"]
    return section


def by_subject(section) -> dict:
    return {i["subject"]: i for i in section["items"]}


def test_a_cluster_whose_scheduler_holds_the_policy_is_decided_and_one_that_cannot_is_a_conflict(
        api, inventory, platform_user):
    section = preemption(api, platform_user)
    items = by_subject(section)

    assert section["title"] == "Preemption"
    assert {s: i["verdict"] for s, i in items.items()} == {
        "gpu-east / training": "decided", "gpu-east / inference": "decided", "gpu-east / development": "decided",
        "gpu-west / training": "conflict", "gpu-west / inference": "decided", "gpu-west / development": "decided"}
    east = items["gpu-east / training"]
    assert east["state"] == ("training priority: may be stopped for production inference after at least 2 hours; "
                             "you get 10 minutes to checkpoint after SIGTERM")
    assert (east["owner"], east["signed_off_by"]) == ("platform-team", "platform-team (initial policy)")
    assert east["evidence"]["priorities"][0]["value"] == 10000
    west = items["gpu-west / training"]
    assert west["state"].startswith("training priority: may be stopped for production inference at any time")
    assert any("cannot hold for one workload" in note for note in west["notes"])
    assert section["summary"]["clusters_decided"] == ["gpu-east"]


def test_live_work_decided_before_the_policy_set_a_priority_inherits_the_scheduler_s_defaults(
        api, inventory, engineer, platform_user, place):
    served = place(engineer, engineer.memberships.first().team, "chat", INFERENCE)
    decided_on = served.decision.cluster
    # As stored before priorities existed (decision version 1): no `priority` key.
    stored = {k: v for k, v in served.decision.to_json().items() if k != "priority"} | {"version": 1}
    GpuRequest.objects.filter(pk=served.pk).update(decision=stored)
    assert Decision.from_json(GpuRequest.objects.get(pk=served.pk).decision).priority is None

    items = by_subject(preemption(api, platform_user))

    other = "gpu-west" if decided_on == "gpu-east" else "gpu-east"
    inherited = items[f"{decided_on} / inference"]
    assert inherited["verdict"] == "inherited" and inherited["owner"] is None
    assert inherited["evidence"]["live_requests_inherited"] == [served.pk]
    assert any("run with the scheduler's defaults" in note and f"#{served.pk}" in note for note in inherited["notes"])
    assert items[f"{other} / inference"]["verdict"] == "decided"


def test_a_class_no_signed_off_rule_covers_is_inherited_on_every_cluster(api, inventory, platform_user):
    draft = policy_version_draft_create(user=platform_user)
    Rule.objects.filter(version=draft, key="development-priority").delete()
    diff = policy_version_diff(version=draft)
    policy_version_sign_off(user=platform_user, version_id=draft.pk, reviewed_digest=diff.digest)
    assert PolicyVersion.objects.get(status="active").number == draft.number

    section = preemption(api, platform_user)
    items = by_subject(section)

    for cluster in ("gpu-east", "gpu-west"):
        item = items[f"{cluster} / development"]
        assert item["verdict"] == "inherited" and item["state"].startswith("not decided: the scheduler's defaults")
        assert item["evidence"]["rules"] == [] and item["evidence"]["uncovered_answers"]
    assert section["summary"]["clusters_inheriting"] == ["gpu-east", "gpu-west"]
    markdown = api(platform_user).get(URL, {"format": "md"}).content.decode()
    assert "## 7. Preemption" in markdown and "| inherited | gpu-east / development |" in markdown
    client = Client()
    client.force_login(platform_user)
    assert "gpu-west / development" in client.get("/register/").content.decode()
