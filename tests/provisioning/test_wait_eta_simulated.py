"""The start estimates' error on the simulated cluster (kubesim.eta): one request waits on fragmentation, one on
the Kueue quota; both start when the work ahead of them ends, and the portal records estimate against actual start.
Everything on the portal's side is the real code over HTTPS against the fake API server; the clock is simulated,
so the figures are the same under any load."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from kubesim import eta
from kubesim.server import FakeKubeAPI
from provisioning.selectors import wait_estimate_error

STEP = 60  # simulated seconds per step: an estimate's error is measured to within a step (plus the pod start)


@pytest.fixture
def sim_kueue(inventory):
    fake = FakeKubeAPI.start(git_version="v1.35.2")  # every CRD the portal knows, Kueue's included
    try:
        eta.seed(fake)
        call_command("register_cluster", "gpu-east", "--server", fake.url, "--token", "t", "--ca-cert-file",
                     fake.ca_file, "--kubernetes-version", "1.35", "--gang-scheduler", "kueue", stdout=StringIO())
        yield fake
    finally:
        fake.stop()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_waits_on_fragmentation_and_quota_start_when_the_work_ahead_ends_and_the_error_is_recorded(
        sim_kueue, team_a, engineer, platform_user, eager_celery):
    clock = eta.Clock(1_790_000_000.0)

    outcome = eta.run(sim_kueue, cluster_name="gpu-east", team=team_a, engineer=engineer,
                      platform_user=platform_user, clock=clock, step_seconds=STEP)

    wide, nxt = outcome.rows
    assert (wide["status"], nxt["status"]) == ("running", "running"), outcome.rows
    # Fragmentation: the pods say no node has room; the fit check names the nodes and the work that frees one.
    assert wide["blockers"] == ["capacity"] and wide["reasons"] == ["Unschedulable"]
    assert wide["unblock"][0].startswith("No node has 8 free GPUs; 2 nodes have 2.")
    assert "team-a/eta-short (running) is expected to end" in wide["basis"] and "expected_hours" in wide["basis"]
    # Quota: Kueue's own condition and shortage; the team's gang in the same queue frees it.
    assert nxt["blockers"] == ["quota"] and nxt["reasons"] == ["WaitingForQuota"]
    assert "32 free up when" in nxt["unblock"][0] and "eta-gang finishes" in nxt["unblock"][0]
    assert "eta-gang" in nxt["basis"] and "its start plus its expected_hours" in nxt["basis"]
    # eta-short ran 2 minutes longer than expected, eta-gang 3 minutes shorter: the errors are those, plus up to
    # two steps of the simulated clock (the freed node is bound at the next step, the pod runs at the one after).
    slack = 2 * STEP / 60
    assert 2 <= wide["error_minutes"] <= 2 + slack, wide
    assert -3 <= nxt["error_minutes"] <= -3 + slack, nxt
    summary = outcome.summary()
    assert summary["waits"] == summary["started"] == 2
    median = (abs(wide["error_minutes"]) + abs(nxt["error_minutes"])) / 2
    assert abs(summary["median_abs_error_minutes"] - median) <= 0.1

    # The portal's own figure agrees, and the platform page shows it.
    error = wait_estimate_error()
    assert error["requests"] == 2
    assert abs(error["median_abs_error_minutes"] - summary["median_abs_error_minutes"]) <= 0.1
    assert error["p90_abs_error_minutes"] == max(abs(wide["error_minutes"]), abs(nxt["error_minutes"]))
    page = Client()
    page.force_login(platform_user)
    html = page.get("/register/").content.decode()
    assert f"median error <strong>{error['median_abs_error_minutes']} minutes</strong> over 2 requests" in html
    assert f"90th percentile {error['p90_abs_error_minutes']} minutes" in html
