"""Section 1, sharing strategy per workload class: given the policy in force and recent requests, the register lists
every rule with its sign-off (decided), every combination of the matchable answers that falls through to the
platform default (inherited) with the requests that took that path, and the drafts awaiting review with their
diff; once a draft moving inference from MIG to whole GPUs is signed off, the rule shows its new signer."""
from __future__ import annotations

import datetime

import pytest
from django.utils import timezone

from intake.models import GpuRequest, PolicyVersion, Rule
from intake.policy_review import policy_version_diff
from intake.services import policy_version_draft_create, policy_version_sign_off
from register.sections import sharing
from tests.register.conftest import INFERENCE, TRAINING, build_section, item

pytestmark = pytest.mark.django_db

FALLING_THROUGH = [
    "training / multi tenant / latency sensitive / standard", "training / multi tenant / latency sensitive / regulated",
    "training / multi tenant / batch / standard", "training / multi tenant / batch / regulated",
    "training / dedicated / latency sensitive / standard", "training / dedicated / latency sensitive / regulated",
    "inference / multi tenant / batch / standard", "inference / multi tenant / batch / regulated",
    "inference / dedicated / latency sensitive / standard", "inference / dedicated / latency sensitive / regulated",
    "inference / dedicated / batch / standard", "inference / dedicated / batch / regulated",
]
INITIAL = "platform-team (initial policy)"


def test_every_rule_is_decided_and_every_uncovered_combination_is_inherited(inventory):
    section = build_section(sharing)

    rules = [i for i in section["items"] if i["subject"].startswith(("route ", "guardrail "))]
    assert [i["subject"] for i in rules] == [
        "guardrail regulated-never-time-sliced", "guardrail regulated-multitenant-fabric",
        "guardrail development-lease", "guardrail inference-priority", "guardrail training-priority",
        "guardrail development-priority", "route training-dedicated-batch", "route inference-shared-latency", "route development-standard",
        "route development-regulated"]
    assert {(i["verdict"], i["owner"], i["signed_off_by"]) for i in rules} == {("decided", "platform-team", INITIAL)}
    route = item(section, "route inference-shared-latency")
    assert route["state"] == "inference, multi tenant, latency sensitive -> MIG slice (else whole GPU)"
    assert route["rationale"].startswith("latency-sensitive inference that shares hardware")
    assert route["evidence"]["match"] == {"workload_class": ["inference"], "tenancy": ["multi_tenant"],
                                          "latency": ["latency_sensitive"]}
    combinations = [i for i in section["items"] if i not in rules]
    assert [i["subject"] for i in combinations] == FALLING_THROUGH
    assert {(i["verdict"], i["owner"], i["signed_off_at"]) for i in combinations} == {("inherited", None, None)}
    regulated = item(section, "training / multi tenant / batch / regulated")
    assert regulated["state"] == ("no route: platform default (whole GPU), then guardrail regulated-never-time-sliced, "
                                  "regulated-multitenant-fabric, training-priority")
    assert regulated["evidence"]["answers"] == {"workload_class": "training", "tenancy": "multi_tenant",
                                                "latency": "batch", "data_sensitivity": "regulated"}
    assert section["summary"]["combinations"] == 24 and section["summary"]["falling_through"] == 12
    assert section["counts"] == {"decided": 10, "inherited": 12, "conflict": 0}


def test_requests_that_took_the_platform_default_are_counted_per_combination(inventory, engineer, team_a, place):
    place(engineer, team_a, "dedicated-serving", {**INFERENCE, "tenancy": "dedicated"})
    place(engineer, team_a, "dedicated-serving-2", {**INFERENCE, "tenancy": "dedicated"}, "pending_approval")
    place(engineer, team_a, "shared-train", {**TRAINING, "tenancy": "multi_tenant"}, "pending_approval")
    old = place(engineer, team_a, "old-batch", {**INFERENCE, "tenancy": "dedicated", "latency": "batch"})
    GpuRequest.objects.filter(pk=old.pk).update(created_at=timezone.now() - datetime.timedelta(days=40))
    place(engineer, team_a, "chat", INFERENCE)  # a rule decides it

    section = build_section(sharing)

    counts = {i["subject"]: i["evidence"]["requests_in_window"] for i in section["items"]
              if i["verdict"] == "inherited"}
    assert counts == {**dict.fromkeys(FALLING_THROUGH, 0),
                      "inference / dedicated / latency sensitive / standard": 2,
                      "training / multi tenant / batch / standard": 1}
    assert item(section, "inference / dedicated / batch / standard")["notes"] == [
        "0 requests in the last 30 days took the platform default with these answers."]
    assert item(section, "route inference-shared-latency")["evidence"]["requests_in_window"] == 1
    assert section["summary"]["requests_falling_through_in_window"] == 3
    assert build_section(sharing, days=60)["summary"]["requests_falling_through_in_window"] == 4


def test_a_draft_moving_inference_from_mig_to_whole_gpus_awaits_review_then_shows_its_signer(
        inventory, engineer, team_a, platform_user, place):
    place(engineer, team_a, "chat", INFERENCE)
    place(engineer, team_a, "train", TRAINING, "pending_approval")
    draft = policy_version_draft_create(user=platform_user, notes="inference on whole GPUs")
    Rule.objects.filter(version=draft, key="inference-shared-latency").update(outcome={"strategy": "whole_gpu"})

    before = build_section(sharing)

    [pending] = before["summary"]["drafts_awaiting_review"]
    assert {k: pending[k] for k in ("number", "notes", "baseline_version", "days", "evaluated", "changed_count",
                                    "by_workload_class", "rules_changed")} == {
        "number": 2, "notes": "inference on whole GPUs", "baseline_version": 1, "days": 30, "evaluated": 2,
        "changed_count": 1, "by_workload_class": {"inference": {"evaluated": 1, "changed": 1},
                                                  "training": {"evaluated": 1, "changed": 0}},
        "rules_changed": [{"rule": "inference-shared-latency", "change": "changed", "fields": ["outcome"]}]}
    assert pending["digest"] == policy_version_diff(version=draft).digest
    assert pending["links"] == {"diff": "/api/v1/policy/versions/2/diff/?days=30",
                                "review": f"/admin/intake/policyversion/{draft.pk}/review/"}
    assert before["summary"]["policy_version"]["number"] == 1
    assert item(before, "route inference-shared-latency")["signed_off_by"] == INITIAL  # v1 is still in force

    policy_version_sign_off(user=platform_user, version_id=draft.pk,
                            reviewed_digest=policy_version_diff(version=draft).digest)
    after = build_section(sharing)

    route = item(after, "route inference-shared-latency")
    assert (route["verdict"], route["owner"], route["signed_off_by"]) == ("decided", "platform-team", "pat")
    assert route["state"] == "inference, multi tenant, latency sensitive -> whole GPU"
    assert route["evidence"]["policy_version"] == 2
    assert item(after, "route training-dedicated-batch")["signed_off_by"] == INITIAL  # unchanged rules keep theirs
    version = after["summary"]["policy_version"]
    assert (version["number"], version["signed_off_by"]) == (2, "pat")
    assert {k: version["review"][k] for k in ("changed_count", "evaluated", "reviewed_by")} == {
        "changed_count": 1, "evaluated": 2, "reviewed_by": "pat"}
    assert after["summary"]["drafts_awaiting_review"] == []


def test_a_new_route_takes_its_combinations_out_of_the_platform_default(inventory, platform_user):
    draft = policy_version_draft_create(user=platform_user)
    Rule.objects.create(version=draft, key="inference-dedicated", kind="route", position=50,
                        match={"workload_class": ["inference"], "tenancy": ["dedicated"]},
                        outcome={"strategy": "whole_gpu"}, rationale="dedicated serving owns its GPUs.",
                        owner="serving-team")
    policy_version_sign_off(user=platform_user, version_id=draft.pk,
                            reviewed_digest=policy_version_diff(version=draft).digest)

    section = build_section(sharing)

    assert section["summary"]["falling_through"] == 8
    assert not [i for i in section["items"] if i["subject"].startswith("inference / dedicated")]
    new = item(section, "route inference-dedicated")
    assert (new["verdict"], new["owner"], new["signed_off_by"]) == ("decided", "serving-team", "pat")


def test_a_rule_nobody_signed_off_is_inherited(inventory):
    Rule.objects.filter(version__status="active", key="development-standard").update(signed_off_by="",
                                                                                     signed_off_at=None)
    rule = item(build_section(sharing), "route development-standard")
    assert (rule["verdict"], rule["signed_off_by"], rule["signed_off_at"]) == ("inherited", None, None)
    assert rule["notes"] == ["Decided 0 requests in the last 30 days. Nobody signed this rule off."]


def test_no_policy_in_force_is_one_inherited_item(inventory):
    PolicyVersion.objects.update(status="retired")
    section = build_section(sharing)
    assert [(i["subject"], i["verdict"], i["state"]) for i in section["items"]] == [
        ("routing policy", "inherited", "no policy version is in force")]


def test_a_signed_off_route_to_mps_is_listed_in_words(inventory, platform_user):
    draft = policy_version_draft_create(user=platform_user, notes="notebooks on MPS")
    Rule.objects.filter(version=draft, key="development-standard").update(
        outcome={"strategy": "mps", "fallback_strategy": "time_slicing", "auto_approve": True})
    Rule.objects.filter(version=draft, key="regulated-never-time-sliced").update(
        outcome={"forbid_strategies": ["time_slicing", "mps"], "replace_with": "mig"})
    policy_version_sign_off(user=platform_user, version_id=draft.pk, reviewed_digest=policy_version_diff(version=draft).digest)

    section = build_section(sharing)

    assert item(section, "route development-standard")["state"] == (
        "development, standard -> MPS GPU share (else time-sliced GPU share, approved automatically)")
    assert item(section, "guardrail regulated-never-time-sliced")["state"] == (
        "guardrail on regulated: never time-sliced GPU share, MPS GPU share (MIG slice instead)")
