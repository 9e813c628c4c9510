"""Ingestion: how a pod's interval is derived, how its share is checked, and what repeated or overlapping
reads do. Pure functions first, then the service against PostgreSQL."""
from __future__ import annotations

from datetime import date
from fractions import Fraction

import pytest

from chargeback.choices import Flag
from chargeback.ingest import annotation_agrees, expected_equivalents, pod_interval, pod_usage
from chargeback.models import UsageCollection, UsageInterval
from chargeback.selectors import report_rows
from chargeback.services import usage_ingest
from chargeback.synthetic import synthetic_pod
from gpu.catalogue import load_catalogue
from tests.chargeback.conftest import pod_for, utc

NOW = utc(2026, 11, 20, 12)
CATALOGUE = load_catalogue()


# --- pure -------------------------------------------------------------------------------------------------------


def _status(*containers, phase="Running", conditions=()):
    return {"phase": phase, "containerStatuses": list(containers), "conditions": list(conditions)}


def test_interval_runs_from_the_earliest_container_start_and_stays_open_while_running():
    status = _status(
        {"state": {"running": {"startedAt": "2026-11-03T10:00:05Z"}}},
        {"state": {"running": {"startedAt": "2026-11-03T10:00:00Z"}}},
    )
    assert pod_interval(status) == (utc(2026, 11, 3, 10), None, "")


def test_a_restarted_container_counts_from_its_first_run_in_last_state():
    status = _status({"state": {"running": {"startedAt": "2026-11-03T10:06:00Z"}},
                      "lastState": {"terminated": {"startedAt": "2026-11-03T10:00:00Z",
                                                   "finishedAt": "2026-11-03T10:05:00Z"}}})
    assert pod_interval(status) == (utc(2026, 11, 3, 10), None, "")


def test_a_crash_looping_pod_keeps_its_gpus_so_the_interval_stays_open():
    status = _status({"state": {"waiting": {"reason": "CrashLoopBackOff"}},
                      "lastState": {"terminated": {"startedAt": "2026-11-03T10:00:00Z",
                                                   "finishedAt": "2026-11-03T10:05:00Z"}}})
    assert pod_interval(status) == (utc(2026, 11, 3, 10), None, "")


def test_a_finished_pod_ends_at_its_latest_container_finish():
    status = _status(
        {"state": {"terminated": {"startedAt": "2026-11-03T10:00:00Z", "finishedAt": "2026-11-03T11:00:00Z"}}},
        {"state": {"terminated": {"startedAt": "2026-11-03T10:00:01Z", "finishedAt": "2026-11-03T11:30:00Z"}}},
        phase="Succeeded",
    )
    assert pod_interval(status) == (utc(2026, 11, 3, 10), utc(2026, 11, 3, 11, 30), "container")


def test_a_deleted_pod_whose_containers_all_stopped_is_finished_even_before_its_phase_says_so():
    status = _status({"state": {"terminated": {"startedAt": "2026-11-03T10:00:00Z",
                                               "finishedAt": "2026-11-03T10:20:00Z"}}})
    assert pod_interval(status, deleting=False) == (utc(2026, 11, 3, 10), None, "")
    assert pod_interval(status, deleting=True) == (utc(2026, 11, 3, 10), utc(2026, 11, 3, 10, 20), "container")


def test_an_evicted_pod_without_finish_times_ends_at_its_last_condition():
    status = _status({"state": {"terminated": {"startedAt": "2026-11-03T10:00:00Z"}}}, phase="Failed",
                     conditions=[{"type": "Ready", "lastTransitionTime": "2026-11-03T12:00:00Z"}])
    assert pod_interval(status) == (utc(2026, 11, 3, 10), utc(2026, 11, 3, 12), "pod_condition")


def test_a_pending_pod_has_no_interval():
    assert pod_interval(_status({"state": {"waiting": {"reason": "ContainerCreating"}}}, phase="Pending")) is None
    assert pod_interval({"phase": "Pending"}) is None


def test_pods_not_managed_by_the_portal_are_ignored(settings):
    pod = synthetic_pod(uid="u1", name="x-1", namespace="n", label_domain="gpu-portal.io", request_id=1, team="t",
                        cluster="c", strategy="whole_gpu", gpu_model="H100-80GB", devices=1, equivalents="1",
                        started_at=utc(2026, 11, 1))
    pod["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "someone-else"
    assert pod_usage(pod, label_domain="gpu-portal.io") is None


def test_labels_are_read_under_the_configured_domain():
    pod = synthetic_pod(uid="u1", name="x-1", namespace="n", label_domain="gpus.example.com", request_id=7, team="t",
                        cluster="c", strategy="mig", gpu_model="H200-141GB", mig_profile="1g.18gb", devices=1,
                        equivalents="0.142857", started_at=utc(2026, 11, 1))
    record = pod_usage(pod, label_domain="gpus.example.com")
    assert (record.claimed_request_id, record.strategy, record.mig_profile, record.devices) == (7, "mig", "1g.18gb", 1)
    assert record.request_id is None  # a claim: nothing the portal applied owns it
    assert pod_usage(pod, label_domain="gpu-portal.io").claimed_request_id is None


@pytest.mark.parametrize("strategy, model, profile, devices, replicas, policy, expected", [
    ("whole_gpu", "H100-80GB", "", 8, None, "compute", Fraction(8)),
    ("mig", "H200-141GB", "1g.18gb", 1, None, "compute", Fraction(1, 7)),
    ("mig", "H200-141GB", "3g.71gb", 1, None, "compute", Fraction(3, 7)),
    ("mig", "A100-80GB", "1g.10gb", 2, None, "compute", Fraction(2, 7)),
    ("mig", "A30-24GB", "4g.24gb", 1, None, "compute", Fraction(1)),
    ("mig", "A30-24GB", "1g.6gb", 1, None, "compute", Fraction(1, 4)),
    ("mig", "H200-141GB", "1g.18gb", 1, None, "memory", Fraction(18, 141)),
    ("time_slicing", "L40S-48GB", "", 1, 4, "compute", Fraction(1, 4)),
    ("time_slicing", "L40S-48GB", "", 1, None, "compute", None),
    ("mig", "H200-141GB", "9g.999gb", 1, None, "compute", None),
])
def test_expected_equivalents_from_the_catalogue(strategy, model, profile, devices, replicas, policy, expected):
    assert expected_equivalents(strategy=strategy, devices=devices, gpu_model=model, mig_profile=profile,
                                catalogue=CATALOGUE, time_slicing_replicas=replicas, policy=policy) == expected


@pytest.mark.parametrize("annotation, exact, agrees", [
    ("0.142857", Fraction(1, 7), True), ("0.1428571428", Fraction(1, 7), True), ("0.25", Fraction(1, 4), True),
    ("0.3", Fraction(1, 4), False), ("1", Fraction(1, 7), False), ("", Fraction(1), False), ("abc", Fraction(1), False),
])
def test_annotation_agrees_to_six_places(annotation, exact, agrees):
    assert annotation_agrees(annotation, exact) is agrees


# --- the service ------------------------------------------------------------------------------------------------



@pytest.mark.django_db
def test_the_catalogue_wins_over_a_hand_edited_annotation_which_is_flagged(requests_a):
    pod = pod_for(requests_a["h200_1g"], equivalents="1", started_at=utc(2026, 11, 2), finished_at=utc(2026, 11, 2, 1))
    result = usage_ingest(cluster_name="gpu-east", pods=[pod], now=NOW)
    interval = UsageInterval.objects.get()
    assert interval.equivalents == Fraction(1, 7)
    assert interval.annotated_equivalents == "1" and interval.flags == [Flag.EQUIVALENTS_MISMATCH]
    assert result.flagged == 1 and UsageCollection.objects.get().flagged == 1


@pytest.mark.django_db
def test_the_memory_policy_prices_a_mig_slice_by_its_memory(requests_a, settings):
    settings.CHARGEBACK_MIG_EQUIVALENTS = "memory"
    usage_ingest(cluster_name="gpu-east", now=NOW,
                 pods=[pod_for(requests_a["h200_1g"], started_at=utc(2026, 11, 2), finished_at=utc(2026, 11, 2, 1))])
    interval = UsageInterval.objects.get()
    assert interval.equivalents == Fraction(18, 141) and interval.flags == []


@pytest.mark.django_db
def test_time_slicing_replicas_come_from_the_requests_pool(requests_a):
    pool = requests_a["ts"].decision
    from provisioning.models import NodePool

    NodePool.objects.filter(cluster__name=pool.cluster, name=pool.node_pool).update(time_slicing_replicas=8)
    usage_ingest(cluster_name="gpu-east", now=NOW,
                 pods=[pod_for(requests_a["ts"], started_at=utc(2026, 11, 2), finished_at=utc(2026, 11, 2, 1))])
    interval = UsageInterval.objects.get()
    # the pod still says 0.25 (rendered for 4 replicas); the pool now has 8
    assert interval.equivalents == Fraction(1, 8) and interval.flags == [Flag.EQUIVALENTS_MISMATCH]


@pytest.mark.django_db
def test_team_and_cost_centre_come_from_the_request_row(requests_a, team_b):
    pod = pod_for(requests_a["whole"], started_at=utc(2026, 11, 2), finished_at=utc(2026, 11, 2, 1))
    pod["metadata"]["labels"]["gpu-portal.io/team"] = "team-b"  # hand-edited
    usage_ingest(cluster_name="gpu-east", pods=[pod], now=NOW)
    interval = UsageInterval.objects.get()
    assert (interval.team.slug, interval.cost_center) == ("team-a", "CC-A")
    assert interval.flags == [Flag.TEAM_MISMATCH]


@pytest.mark.django_db
def test_a_pods_request_label_plays_no_part_its_owner_decides(requests_a, team_b):
    pod = pod_for(requests_a["whole"], started_at=utc(2026, 11, 2), finished_at=utc(2026, 11, 2, 1))
    pod["metadata"]["labels"].update({"gpu-portal.io/request-id": "999999", "gpu-portal.io/team": "team-b"})
    usage_ingest(cluster_name="gpu-east", pods=[pod], now=NOW)
    interval = UsageInterval.objects.get()
    assert interval.request == requests_a["whole"] and interval.team.slug == "team-a" and interval.cost_center == "CC-A"
    assert interval.flags == [Flag.TEAM_MISMATCH]


@pytest.mark.django_db
def test_a_pod_nothing_the_portal_applied_owns_is_billed_to_its_namespaces_team_and_flagged(requests_a, team_b):
    pod = pod_for(requests_a["whole"], started_at=utc(2026, 11, 2), finished_at=utc(2026, 11, 2, 1), owner=None)
    pod["metadata"]["labels"]["gpu-portal.io/team"] = "team-b"
    usage_ingest(cluster_name="gpu-east", pods=[pod], now=NOW)
    interval = UsageInterval.objects.get()
    assert interval.request is None and interval.team.slug == "team-a" and interval.cost_center == "CC-A"
    assert interval.flags == [Flag.FOUND_IN_CLUSTER]


@pytest.mark.django_db
def test_a_pod_whose_share_cannot_be_known_is_skipped_and_reported(requests_a):
    pod = pod_for(requests_a["whole"], started_at=utc(2026, 11, 2))
    pod["metadata"]["labels"]["gpu-portal.io/request-id"] = "999999"
    pod["metadata"]["labels"]["gpu-portal.io/strategy"] = "time_slicing"  # no request -> no pool -> no replicas
    pod["metadata"]["annotations"]["gpu-portal.io/gpu-equivalents"] = ""
    result = usage_ingest(cluster_name="gpu-east", pods=[pod], now=NOW)
    assert result.inserted == 0 and len(result.skipped) == 1 and "GPU equivalents unknown" in result.skipped[0]
    assert "GPU equivalents unknown" in UsageCollection.objects.get().message


@pytest.mark.django_db
def test_a_later_read_that_lost_the_first_run_keeps_the_earliest_start(requests_a):
    first_run = utc(2026, 11, 3, 10)
    early = pod_for(requests_a["whole"], uid="p1", started_at=first_run, restarted_at=utc(2026, 11, 3, 10, 6))
    # two restarts later, Kubernetes only remembers the run that started at 10:11
    late = pod_for(requests_a["whole"], uid="p1", started_at=utc(2026, 11, 3, 10, 11), restarted_at=utc(2026, 11, 3, 10, 20))
    usage_ingest(cluster_name="gpu-east", pods=[early], now=utc(2026, 11, 3, 10, 7))
    usage_ingest(cluster_name="gpu-east", pods=[late], now=utc(2026, 11, 3, 10, 21))
    # and an older read arriving last changes nothing either
    assert usage_ingest(cluster_name="gpu-east", pods=[early], now=utc(2026, 11, 3, 10, 8)).rows_written == 0
    assert list(UsageInterval.objects.values_list("started_at", "ended_at")) == [(first_run, None)]


@pytest.mark.django_db
def test_a_late_read_learns_the_earlier_start(requests_a):
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 3, 10, 21),
                 pods=[pod_for(requests_a["whole"], uid="p1", started_at=utc(2026, 11, 3, 10, 11))])
    result = usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 3, 10, 22),
                          pods=[pod_for(requests_a["whole"], uid="p1", started_at=utc(2026, 11, 3, 10))])
    assert result.updated == 1
    assert UsageInterval.objects.get().started_at == utc(2026, 11, 3, 10)


@pytest.mark.django_db
def test_an_open_interval_is_closed_at_report_time_without_being_stored(requests_a, finance_user):
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 3, 11),
                 pods=[pod_for(requests_a["whole"], devices=1, started_at=utc(2026, 11, 3, 10))])
    for now, seconds in ((utc(2026, 11, 3, 12), 7200), (utc(2026, 11, 3, 13), 10800)):
        [row] = report_rows(user=finance_user, start=date(2026, 11, 1), end=date(2026, 12, 1), group_by=[], now=now)
        assert Fraction(row["device_seconds"]) == seconds
    assert UsageInterval.objects.get().ended_at is None


@pytest.mark.django_db
def test_a_finished_pod_closes_its_open_interval(requests_a):
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 3, 11),
                 pods=[pod_for(requests_a["whole"], uid="p1", started_at=utc(2026, 11, 3, 10))])
    result = usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 3, 13), pods=[
        pod_for(requests_a["whole"], uid="p1", started_at=utc(2026, 11, 3, 10), finished_at=utc(2026, 11, 3, 12, 30))])
    assert result.updated == 1
    interval = UsageInterval.objects.get()
    assert (interval.ended_at, interval.end_source) == (utc(2026, 11, 3, 12, 30), "container")


@pytest.mark.django_db
def test_a_pod_that_disappears_is_closed_at_the_last_pass_that_saw_it_until_its_finish_is_known(requests_a):
    pod = pod_for(requests_a["whole"], uid="p1", started_at=utc(2026, 11, 3, 10))
    usage_ingest(cluster_name="gpu-east", pods=[pod], now=utc(2026, 11, 3, 11))
    usage_ingest(cluster_name="gpu-east", pods=[pod], now=utc(2026, 11, 3, 11, 5))
    # deleted between two passes: the next complete list no longer has it
    result = usage_ingest(cluster_name="gpu-east", pods=[], now=utc(2026, 11, 3, 11, 10))
    assert result.vanished == 1
    interval = UsageInterval.objects.get()
    assert (interval.ended_at, interval.end_source) == (utc(2026, 11, 3, 11, 5), "vanished")
    # an overlapping worker that read the pod terminated still gets the real finish in
    finished = pod_for(requests_a["whole"], uid="p1", started_at=utc(2026, 11, 3, 10), finished_at=utc(2026, 11, 3, 11, 7))
    usage_ingest(cluster_name="gpu-east", pods=[finished], now=utc(2026, 11, 3, 11, 8), complete=False)
    interval.refresh_from_db()
    assert (interval.ended_at, interval.end_source) == (utc(2026, 11, 3, 11, 7), "container")


@pytest.mark.django_db
def test_a_partial_list_closes_nothing_and_other_clusters_are_untouched(requests_a):
    usage_ingest(cluster_name="gpu-east", now=utc(2026, 11, 3, 11),
                 pods=[pod_for(requests_a["whole"], started_at=utc(2026, 11, 3, 10))])
    assert usage_ingest(cluster_name="gpu-east", pods=[], now=utc(2026, 11, 3, 12), complete=False).vanished == 0
    assert usage_ingest(cluster_name="gpu-west", pods=[], now=utc(2026, 11, 3, 12)).vanished == 0
    assert UsageInterval.objects.get().ended_at is None


@pytest.mark.django_db
def test_an_older_read_processed_after_a_newer_one_does_not_close_pods_it_predates(requests_a):
    old_pod = pod_for(requests_a["whole"], uid="p-old", started_at=utc(2026, 11, 3, 9))
    new_pod = pod_for(requests_a["whole"], uid="p-new", started_at=utc(2026, 11, 3, 11, 30))
    usage_ingest(cluster_name="gpu-east", pods=[old_pod], now=utc(2026, 11, 3, 10))
    usage_ingest(cluster_name="gpu-east", pods=[old_pod, new_pod], now=utc(2026, 11, 3, 12))
    # a worker that listed at 11:00 (before p-new existed) commits last
    assert usage_ingest(cluster_name="gpu-east", pods=[old_pod], now=utc(2026, 11, 3, 11)).vanished == 0
    assert set(UsageInterval.objects.values_list("pod_uid", "ended_at")) == {("p-old", None), ("p-new", None)}


def test_the_bounds_a_pod_is_read_with_are_the_columns_it_is_stored_in():
    from chargeback.ingest import FIELD_LIMITS
    from portal.models import Team

    columns = {name: UsageInterval._meta.get_field(name).max_length for name in FIELD_LIMITS if name != "team"}
    assert FIELD_LIMITS == {**columns, "team": Team._meta.get_field("slug").max_length}
