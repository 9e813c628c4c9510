"""Kueue's visibility API (an aggregated API server of Kueue's, `visibility.kueue.x-k8s.io`), answered from the
stored Workloads."""
from __future__ import annotations

from typing import Any

from kmock._internal import rendering

from kubesim.server.http import api_error

KUEUE_VISIBILITY = "visibility.kueue.x-k8s.io"


class VisibilityMixin:
    def _pending_workloads(self, request: rendering.Request) -> dict[str, Any]:
        """Kueue's visibility API (kueue v0.19.2 pkg/visibility/storage/pending_workloads_{cq,lq}.go): the stored
        Workloads of a ClusterQueue (through their LocalQueues' spec.clusterQueue) without QuotaReserved=True,
        highest priority first, then oldest, with positions counted from 0; a LocalQueue's answer keeps only its own
        (positionInClusterQueue still counts the whole ClusterQueue)."""
        local_queues = {(q["metadata"].get("namespace"), q["metadata"]["name"]): (q.get("spec") or {}).get(
            "clusterQueue") for q in self._kueue_objects("LocalQueue")}
        if request.resource.plural == "localqueues":
            cluster_queue = local_queues.get((request.namespace, request.name))
        else:
            cluster_queue = request.name if any(cq == request.name for cq in local_queues.values()) else None
        if cluster_queue is None:
            raise api_error(404, "NotFound", f'{request.resource.plural[:-1]} "{request.name}" not found')
        pending = [w for w in self._kueue_objects("Workload")
                   if local_queues.get((w["metadata"].get("namespace"), (w.get("spec") or {}).get("queueName")))
                   == cluster_queue and not any(c.get("type") == "QuotaReserved" and c.get("status") == "True"
                                                for c in (w.get("status") or {}).get("conditions") or ())]
        pending.sort(key=lambda w: (-int((w.get("spec") or {}).get("priority") or 0),
                                    w["metadata"].get("creationTimestamp", ""), w["metadata"]["name"]))
        items, in_local = [], {}
        for index, workload in enumerate(pending):
            meta, queue = workload["metadata"], (workload.get("spec") or {}).get("queueName")
            key = (meta.get("namespace"), queue)
            position = in_local[key] = in_local.get(key, -1) + 1
            if request.resource.plural == "localqueues" and key != (request.namespace, request.name):
                continue
            items.append({
                "metadata": {"name": meta["name"], "namespace": meta.get("namespace"),
                             "creationTimestamp": meta.get("creationTimestamp"),
                             "ownerReferences": [{k: o[k] for k in ("apiVersion", "kind", "name", "uid") if k in o}
                                                 for o in meta.get("ownerReferences") or ()]},
                "priority": int((workload.get("spec") or {}).get("priority") or 0), "localQueueName": queue,
                "positionInClusterQueue": index, "positionInLocalQueue": position,
            })
        return {"kind": "PendingWorkloadsSummary", "apiVersion": f"{KUEUE_VISIBILITY}/v1beta2",
                "metadata": {"creationTimestamp": None}, "items": items}

    def _kueue_objects(self, kind: str) -> list[dict[str, Any]]:
        """The stored Kueue objects of one kind, every served version (not a copy of every object of the store)."""
        return [obj for served in self._served.values() if served.group == "kueue.x-k8s.io" and served.kind == kind
                for _, obj in self._live_items(served)]
