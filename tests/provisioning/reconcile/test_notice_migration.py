"""Migration provisioning 0021: stalled-gang notifications stored before it become portal notices keyed by their
stall and kind, about their stall, with their status, attempts, message, channel, target, payload and times kept
(one waiting for a retry is queued for the sweep); migrating back restores them."""
from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from portal.models import Notice
from provisioning.models import Cluster, GangStall

BEFORE = [("provisioning", "0020_admission_binding")]


def migrate(targets=None):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets or executor.loader.graph.leaf_nodes())
    return executor


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_migration_moves_gang_notifications_onto_portal_notices_and_back(provision):
    gpu_request = provision()
    now = timezone.now()
    stall = GangStall.objects.create(
        request=gpu_request, cluster=Cluster.objects.get(name="gpu-east"), workload_class="training",
        started_at=now - timedelta(minutes=20), detected_at=now - timedelta(minutes=5), running_pods=3,
        pending_pods=1, gpu_equivalents_running=Decimal(24), segment_started_at=now - timedelta(minutes=20))
    executor = migrate(BEFORE)
    GangNotification = executor.loader.project_state(BEFORE).apps.get_model("provisioning", "GangNotification")
    created = now - timedelta(days=2)
    rows = [("stalled", "email", "sent", 1, "", {"subject": "s", "body": "b", "to": ["team-a@example.com"]}),
            ("stalled", "webhook", "retrying", 3, "Attempt 3 failed: HTTP 503", {"event": "gang.stalled"}),
            ("released", "webhook", "failed", 1, "HTTP 404", {"event": "gang.released"})]
    for kind, channel, status, attempts, message, payload in rows:
        row = GangNotification.objects.create(
            stall_id=stall.pk, kind=kind, channel=channel, target="somewhere", payload=payload, status=status,
            attempts=attempts, message=message, sent_at=created if status == "sent" else None)
        GangNotification.objects.filter(pk=row.pk).update(created_at=created, updated_at=created)

    migrate()

    key = f"gang-stall:{stall.pk}:"
    assert set(Notice.objects.values_list("key", "team_id", "channel", "target", "status", "attempts", "message",
                                          "created_at", "updated_at")) == {
        (f"{key}stalled", gpu_request.team_id, "email", "somewhere", "sent", 1, "", created, created),
        (f"{key}stalled", gpu_request.team_id, "webhook", "somewhere", "queued", 3, "Attempt 3 failed: HTTP 503",
         created, created),
        (f"{key}released", gpu_request.team_id, "webhook", "somewhere", "failed", 1, "HTTP 404", created, created)}
    assert Notice.objects.get(channel="email").payload == rows[0][5]
    assert Notice.objects.get(channel="email").sent_at == created
    stall = GangStall.objects.get(pk=stall.pk)
    assert {n.key for n in stall.notices.all()} == {f"{key}stalled", f"{key}released"}  # about their stall
    assert [n.channel for n in stall.stalled_notices] == ["email", "webhook"]
    assert "provisioning_gangnotification" not in connection.introspection.table_names()

    executor = migrate(BEFORE)
    restored = executor.loader.project_state(BEFORE).apps.get_model("provisioning", "GangNotification")
    assert set(restored.objects.values_list("stall_id", "kind", "channel", "status", "created_at")) == {
        (stall.pk, "stalled", "email", "sent", created), (stall.pk, "stalled", "webhook", "queued", created),
        (stall.pk, "released", "webhook", "failed", created)}
    assert not Notice.objects.filter(key__startswith=key).exists()
    migrate()
