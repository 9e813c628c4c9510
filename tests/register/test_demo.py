"""The quickstart's register: some decisions signed off, some inherited, one conflict; a driver owner on gpu-east
and none on gpu-west; loading the demo twice records nothing twice."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from intake.models import PolicyVersion
from register.models import DriverUpgradePlan, PlatformDecision
from register.selectors import register_build

pytestmark = pytest.mark.django_db


def verdicts(register, area):
    section = next(s for s in register["sections"] if s["area"] == area)
    return {i["subject"]: (i["verdict"], i["owner"]) for i in section["items"]}


def test_the_demo_register_has_decided_inherited_and_conflicting_items_and_is_idempotent():
    call_command("load_demo", stdout=StringIO())
    rows = (PlatformDecision.objects.count(), DriverUpgradePlan.objects.count(), PolicyVersion.objects.count())
    call_command("load_demo", stdout=StringIO())
    assert (PlatformDecision.objects.count(), DriverUpgradePlan.objects.count(),
            PolicyVersion.objects.count()) == rows == (5, 1, 2)

    register = register_build()

    assert all(register["counts"][v] > 0 for v in ("decided", "inherited", "conflict"))
    drivers = verdicts(register, "driver_lifecycle")
    assert drivers["gpu-east/h100-train"] == ("decided", "pat (GPU infrastructure)")
    assert drivers["gpu-west/b200-train"] == ("inherited", "nobody")
    scheduling = verdicts(register, "scheduling_model")
    assert scheduling["gpu-east"][0] == "decided" and scheduling["gpu-east/h100-train"][0] == "conflict"
    assert scheduling["gpu-west"] == ("inherited", None)
    assert verdicts(register, "gang_scheduling") == {"gpu-east": ("decided", "platform-team"),
                                                     "gpu-west": ("inherited", None)}
    sharing = next(s for s in register["sections"] if s["area"] == "sharing_strategy")
    [draft] = sharing["summary"]["drafts_awaiting_review"]
    assert draft["rules_changed"][0]["rule"] == "inference-shared-latency" and draft["changed_count"] >= 1
