"""What the portal applied on a cluster, by UID: what metering binds pods to (contract.applied_request_id)."""
from __future__ import annotations

from ..contract import AppliedOwner
from ..models import AppliedObject


def applied_owners(*, cluster_name: str) -> dict[str, AppliedOwner]:
    """Every object the portal applied for a request on the cluster, by the UID the API server gave it when the
    portal applied it (deleted ones too: their pods may still be finishing). Objects applied without a UID (the
    GitOps applier's) bind nothing."""
    rows = (AppliedObject.objects.filter(cluster__name=cluster_name, request__isnull=False).exclude(uid="")
            .values_list("uid", "request_id", "kind", "namespace"))
    return {uid: AppliedOwner(request_id=request_id, kind=kind, namespace=namespace)
            for uid, request_id, kind, namespace in rows}
