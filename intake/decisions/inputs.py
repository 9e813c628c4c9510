"""What a decision is made from, as plain frozen dataclasses: the answers, the policy's rules and the inventory
(clusters and their pools, with the GPU catalogue)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu import gangapi
from gpu.catalogue import Catalogue
from gpu.pools import PoolSpec
from gpu.vocabulary import NATIVE


@dataclass(frozen=True)
class Answers:
    workload_class: str
    tenancy: str
    latency: str
    gpu_memory_gb: float
    image: str
    data_sensitivity: str = "standard"
    gpus_per_replica: int = 1
    replicas: int = 1
    min_driver_major: int | None = None
    command: tuple[str, ...] = ()
    expected_hours: float | None = None
    lease_hours: float | None = None
    defaulted: frozenset[str] = frozenset()

    @classmethod
    def from_dict(cls, values: dict[str, Any], defaulted=()) -> Answers:
        data = dict(values)
        data["command"] = tuple(data.get("command") or ())
        return cls(**data, defaulted=frozenset(defaulted))

    def get(self, key: str) -> Any:
        return getattr(self, key)

    @property
    def memory_per_device(self) -> float:
        """The memory one device must hold: the replica's memory split across its GPUs."""
        return self.gpu_memory_gb / self.gpus_per_replica


@dataclass(frozen=True)
class RuleSpec:
    key: str
    kind: str  # route | guardrail
    match: dict[str, tuple[str, ...]]
    outcome: dict[str, Any]
    rationale: str
    owner: str
    position: int = 0
    id: int | None = None

    @property
    def specificity(self) -> int:
        return len(self.match)

    def matches(self, answers: Answers) -> bool:
        return all(answers.get(key) in values for key, values in self.match.items())


@dataclass(frozen=True)
class PolicySpec:
    version: int
    rules: tuple[RuleSpec, ...]

    def routes(self) -> list[RuleSpec]:
        return [r for r in self.rules if r.kind == "route"]

    def guardrails(self) -> list[RuleSpec]:
        return sorted((r for r in self.rules if r.kind == "guardrail"), key=lambda r: (r.position, r.key))


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    kubernetes_version: str
    scheduling_model: str
    gang_scheduler: str
    pools: tuple[PoolSpec, ...]
    id: int | None = None
    feature_gates: tuple[str, ...] = ()
    jobset: bool = False
    gang_topology_key: str = ""
    gang_topology_name: str = ""

    @property
    def has_gang_scheduler(self) -> bool:
        return self.gang_scheduler != "none"

    @property
    def minor(self) -> int:
        return int(str(self.kubernetes_version).split(".")[1])

    def gang_refusal(self) -> str | None:
        """Why this cluster's gang backend cannot run a gang as declared (the native API's gates), or None."""
        if self.gang_scheduler == NATIVE:
            return gangapi.native_gang_refusal(self.minor, self.feature_gates, self.name)
        return None


@dataclass(frozen=True)
class Inventory:
    clusters: tuple[ClusterSpec, ...]
    catalogue: Catalogue

    def pools(self):
        for cluster in self.clusters:
            for pool in cluster.pools:
                yield cluster, pool
