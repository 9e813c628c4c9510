"""Usage collection: one pass per cluster, reading its portal pods and ingesting them, then booking the stalls
that are over."""
from __future__ import annotations

import logging

from django.utils import timezone

from portal.errors import InvalidInput
from provisioning.models import Cluster

from ..choices import CollectionStatus
from ..collect import pods_and_facts
from ..models import UsageCollection
from .ingestion import usage_ingest
from .waste import waste_record_stalls

logger = logging.getLogger(__name__)


def usage_collect(*, cluster_name: str | None = None) -> list[UsageCollection]:
    """One collection pass per enabled cluster (or the named one): read its portal pods and ingest them.
    GitOps clusters without an API server cannot be read and are recorded as skipped."""
    clusters = Cluster.objects.filter(enabled=True).select_related("credential").order_by("name")
    if cluster_name:
        clusters = Cluster.objects.filter(name=cluster_name).select_related("credential")
        if not clusters:
            raise InvalidInput(f"No cluster named {cluster_name!r}.", field="cluster")
    done = []
    for cluster in clusters:
        now = timezone.now()
        if not cluster.api_server:
            done.append(UsageCollection.objects.create(
                cluster=cluster.name, listed_at=now, status=CollectionStatus.SKIPPED,
                message=f"Cluster {cluster.name} has no API server to read pods from "
                        f"(applier {cluster.applier}); set api_server and credentials to meter it.",
            ))
            continue
        try:
            pods, facts = pods_and_facts(cluster)
        except Exception as exc:  # noqa: BLE001 - any read failure is recorded on the row, the next pass retries
            logger.warning("collect %s failed: %s", cluster.name, exc)
            done.append(UsageCollection.objects.create(
                cluster=cluster.name, listed_at=now, status=CollectionStatus.FAILED,
                message=f"{type(exc).__name__}: {exc}"[:2000],
            ))
            continue
        result = usage_ingest(cluster_name=cluster.name, pods=pods, now=now, source="collector", facts=facts)
        waste_record_stalls(cluster_name=cluster.name, now=now)
        done.append(UsageCollection.objects.get(pk=result.collection_id))
    return done
