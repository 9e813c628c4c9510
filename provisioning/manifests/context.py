"""What every builder of one request needs, computed once per render: names, labels, Kubernetes minor."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpu.vocabulary import SCHEDULING_MODELS, STRATEGIES, WORKLOAD_CLASSES

from .errors import RenderError
from .labels import pod_annotations, request_labels
from .names import request_base_name, team_namespace
from .spec import ClusterProfile, RequestSpec

SUPPORTED_MINORS = (34, 35, 36, 37)
_VERSION = re.compile(r"^v?1\.(\d+)(?:\.\d+)?$")



def kubernetes_minor(version: str) -> int:
    """1.34 -> 34. The renderer supports 1.34 (DRA v1 GA) to 1.37 (newest schemas we validate against)."""
    match = _VERSION.match(str(version).strip())
    if not match or int(match[1]) not in SUPPORTED_MINORS:
        raise RenderError(
            f"Kubernetes version {version!r} is not supported: the renderer writes manifests for "
            f"1.{SUPPORTED_MINORS[0]} to 1.{SUPPORTED_MINORS[-1]}. "
            "Set the cluster's kubernetes_version to one of those."
        )
    return int(match[1])


@dataclass(frozen=True)
class RenderContext:
    request: RequestSpec
    cluster: ClusterProfile
    minor: int
    namespace: str
    base: str  # the request's base name; every object name derives from it
    labels: dict[str, str]
    pod_annotations: dict[str, str]

    @property
    def domain(self) -> str:
        return self.cluster.label_domain

    def metadata(self, name: str, *, annotations: dict[str, str] | None = None) -> dict:
        meta = {"name": name, "namespace": self.namespace, "labels": dict(self.labels)}
        if annotations:
            meta["annotations"] = dict(annotations)
        return meta


def make_context(request: RequestSpec, cluster: ClusterProfile) -> RenderContext:
    if request.workload_class not in WORKLOAD_CLASSES:
        raise RenderError(
            f"Unknown workload class {request.workload_class!r}; expected one of {', '.join(WORKLOAD_CLASSES)}."
        )
    if request.strategy not in STRATEGIES:
        raise RenderError(f"Unknown sharing strategy {request.strategy!r}; expected one of {', '.join(STRATEGIES)}.")
    if cluster.scheduling_model not in SCHEDULING_MODELS:
        raise RenderError(
            f"Unknown scheduling model {cluster.scheduling_model!r} on cluster {cluster.name}; "
            "expected device_plugin or dra."
        )
    if request.replicas < 1 or request.gpus_per_replica < 1:
        raise RenderError("A request needs at least one replica and at least one GPU (or slice, or share) per replica.")
    if not request.image:
        raise RenderError("The request has no container image; set one before provisioning.")
    return RenderContext(
        request=request,
        cluster=cluster,
        minor=kubernetes_minor(cluster.kubernetes_version),
        namespace=team_namespace(request.team),
        base=request_base_name(request.name, request.request_id),
        labels=request_labels(request, cluster),
        pod_annotations=pod_annotations(request, cluster),
    )
