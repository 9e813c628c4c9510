"""Where a request can run: the pools that offer its strategy (or the rule's fallback), hold its memory, could
ever hold every replica at once and, for a gang, can gang-schedule; the smallest device that fits first."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from gpu import gangapi
from gpu.catalogue import MigProfileSpec
from gpu.equivalents import gpu_equivalents
from gpu.vocabulary import DRA, MIG, MPS, REPLICATED, STRATEGY_WORDS, TIME_SLICING, WHOLE_GPU
from gpu.vocabulary import SHARING_MODE_FOR_STRATEGY as SHARING_MODE
from portal.text import plural

from .inputs import Answers, ClusterSpec, Inventory, PoolSpec
from .reasons import PlacementImpossible, gb
from .rules import PLATFORM_DEFAULT_STRATEGY, DriverNeed


@dataclass(frozen=True)
class Candidate:
    cluster: ClusterSpec
    pool: PoolSpec
    profile: MigProfileSpec | None
    gpu_memory_gb: float  # what one device holds for this request (an MPS client: its memory limit)


@dataclass(frozen=True)
class Skipped:
    """A pool that offers the strategy and the memory but can never hold the request as asked."""

    pool: str
    why: str
    field: str  # the answer to change


# What one replica's devices are called, per strategy, to say why a pool is too small.
_UNIT = {WHOLE_GPU: "GPU", MIG: "slice", TIME_SLICING: "time-sliced share", MPS: "MPS share"}

# One CUDA process enumerates one MIG device and slices have no P2P/NVLink between them; a time-sliced (or MPS)
# share asked for twice can be the same GPU twice (NCCL "Duplicate GPU"), and the device plugin's
# failRequestsGreaterThanOne refuses it (k8s-device-plugin v0.20 api/config/v1/config.go).
ONE_DEVICE_PER_REPLICA = {
    MIG: "a CUDA process sees one MIG device, and slices have no NVLink or peer-to-peer path between them",
    TIME_SLICING: "two shares may be the same GPU twice, and the device plugin refuses a request for more than one",
    MPS: "two MPS shares may be the same GPU twice, and the device plugin refuses more than one for MPS by default",
}


# The MPS server of a DRA request is started by its claim's GpuConfig, and Kueue's DRA integration takes no claim
# config (kueue v0.19.2 docs concepts/dynamic_resource_allocation.md, "Limitations"; manifests/devices.py).
KUEUE_NO_MPS = ("Kueue admits the gang with no claim config, so its DRA claims could not start an MPS server and the "
                "pods would get plain whole GPUs")


def _gang(answers: Answers) -> bool:
    return answers.workload_class == "training" and answers.replicas > 1


def _devices_per_node(strategy: str, pool: PoolSpec, profile: MigProfileSpec | None) -> int:
    if strategy == MIG:
        return pool.mig_profiles.get(profile.name, 0) * pool.gpus_per_node
    if strategy in REPLICATED:
        return pool.gpus_per_node * (pool.time_slicing_replicas or 1)
    return pool.gpus_per_node


def _size_refusal(strategy: str, pool: PoolSpec, profile: MigProfileSpec | None, answers: Answers) -> Skipped | None:
    """Why the pool can never hold every replica at once, even empty; None when it can."""
    name = f"{pool.cluster}/{pool.name}"
    per_node = _devices_per_node(strategy, pool, profile)
    unit = f"{profile.name} slice" if profile else _UNIT[strategy]
    if per_node < answers.gpus_per_replica:
        return Skipped(name, f"its nodes have {plural(per_node, unit)} each and a replica needs "
                             f"{answers.gpus_per_replica} on one node", "gpus_per_replica")
    most = (per_node // answers.gpus_per_replica) * pool.node_count
    if most < answers.replicas:
        return Skipped(name, f"{plural(pool.node_count, 'node')} of {plural(per_node, unit)} hold at most "
                             f"{most} of the {answers.replicas} replicas", "replicas")
    return None


def candidates(strategy: str, answers: Answers, inventory: Inventory, allowed_models,
               driver: DriverNeed) -> tuple[list[Candidate], list[Skipped]]:
    """The pools that offer `strategy` with enough memory per device, and those skipped as never big enough."""
    per_device = answers.memory_per_device
    found, skipped = [], []
    for cluster, pool in inventory.pools():
        if pool.sharing_mode != SHARING_MODE[strategy]:
            continue
        if allowed_models and pool.gpu_model not in allowed_models:
            continue
        if pool.gpu_model not in inventory.catalogue.models:
            continue
        model = inventory.catalogue.model(pool.gpu_model)
        if not driver.allows(pool.driver_major):
            continue
        profile = None
        if strategy == MIG:
            if model.mig is None:
                continue
            profile = model.mig.smallest_profile_covering(per_device, offered=set(pool.mig_profiles))
            if profile is None:
                continue
            memory = profile.memory_gb
        elif strategy == MPS:
            # The device plugin fails MPS requests for more than one share (failRequestsGreaterThanOne).
            if pool.scheduling_model != DRA and answers.gpus_per_replica > 1:
                continue
            if pool.scheduling_model == "dra" and cluster.gang_scheduler == "kueue" and _gang(answers):
                skipped.append(Skipped(f"{pool.cluster}/{pool.name}", KUEUE_NO_MPS, "replicas"))
                continue
            # The MPS control daemon caps each client at 1/replicas of the GPU's memory, unlike time-slicing.
            memory = model.memory_gb / (pool.time_slicing_replicas or 1)
            if memory < per_device:
                continue
        else:
            if model.memory_gb < per_device:
                continue
            memory = model.memory_gb
        refusal = _size_refusal(strategy, pool, profile, answers)
        if refusal:
            skipped.append(refusal)
            continue
        found.append(Candidate(cluster=cluster, pool=pool, profile=profile, gpu_memory_gb=memory))
    return found, skipped


def one_device_fallback(strategy: str, answers: Answers, outcome: dict,
                        forbidden: set[str]) -> tuple[str, str | None, str]:
    """(strategy, the one it replaced or None, why): a replica that needs several devices cannot use a strategy
    that gives one device per replica, so the rule's stated fallback replaces it, or the request is refused."""
    if not (strategy in ONE_DEVICE_PER_REPLICA and answers.gpus_per_replica > 1):
        return strategy, None, ""
    stated = outcome.get("fallback_strategy")
    if stated is None or stated in forbidden or stated in ONE_DEVICE_PER_REPLICA:
        raise PlacementImpossible(
            f"A replica can use only one {STRATEGY_WORDS[strategy]}: {ONE_DEVICE_PER_REPLICA[strategy]}. Ask "
            "for 1 GPU per replica (and more replicas, or more memory), or for a workload class the policy "
            "gives whole GPUs.",
            field="gpus_per_replica",
        )
    why = (f"a replica that needs {answers.gpus_per_replica} devices cannot use {STRATEGY_WORDS[strategy]}s: "
           f"{ONE_DEVICE_PER_REPLICA[strategy]}")
    return stated, strategy, why


def candidates_or_fallback(strategy: str, fallback_from: str | None, answers: Answers, inventory: Inventory, *,
                           outcome: dict, forbidden: set[str], allowed_models, driver: DriverNeed,
                           ) -> tuple[str, str | None, list[Candidate], list[Skipped]]:
    """(strategy, fallen back from, candidates, skipped): no pool for a shared strategy falls back to the rule's
    fallback (else the platform default) unless a guardrail forbids it; none at all is refused, saying why."""
    found, skipped = candidates(strategy, answers, inventory, allowed_models, driver)
    if not found and strategy != WHOLE_GPU and not fallback_from:
        fallback = outcome.get("fallback_strategy", PLATFORM_DEFAULT_STRATEGY)
        if fallback not in forbidden:
            fallback_from, strategy = strategy, fallback
            found, skipped_fallback = candidates(strategy, answers, inventory, allowed_models, driver)
            skipped += skipped_fallback
    if not found and skipped:
        raise PlacementImpossible(_too_small_message(skipped), field=_field_to_change(skipped))
    if not found:
        raise PlacementImpossible(_no_pool_message(strategy, answers, inventory, driver), field="gpu_memory_gb")
    return strategy, fallback_from, found, skipped


def gang_capable(answers: Answers, found: list[Candidate]) -> list[Candidate]:
    """The candidates on clusters that can gang-schedule as declared; none is refused, saying why."""
    capable = [c for c in found if c.cluster.has_gang_scheduler]
    refused = [c for c in capable if c.cluster.gang_refusal()]
    capable = [c for c in capable if not c.cluster.gang_refusal()]
    if not capable and refused:
        raise PlacementImpossible(
            f"{answers.replicas} training replicas must start all-or-nothing, but the cluster that could host "
            f"them cannot gang-schedule as declared: {refused[0].cluster.gang_refusal()} (cluster field "
            "feature_gates). Ask for one replica, or ask the platform team to enable the gate.",
            field="replicas",
        )
    if not capable:
        names = sorted({c.cluster.name for c in found})
        raise PlacementImpossible(
            f"{answers.replicas} training replicas must start all-or-nothing, but "
            f"{'the clusters' if len(names) > 1 else 'the cluster'} that could host them ({', '.join(names)}) "
            f"{'have' if len(names) > 1 else 'has'} no gang scheduler: three of four pods could run and burn "
            "GPU-hours while the last one waits. Ask for one replica, or ask the platform team for gang "
            "scheduling on that cluster.",
            field="replicas",
        )
    return capable


def smallest(found: list[Candidate]) -> Candidate:
    """The smallest device that fits (big GPUs are kept for big work), then stable names."""
    return min(found, key=lambda c: (c.gpu_memory_gb, c.profile.compute_slices if c.profile else 0,
                                     c.cluster.name, c.pool.name))


def equivalents(strategy: str, candidate: Candidate, inventory: Inventory, count: int) -> Fraction:
    """GPU equivalents of `count` devices of this candidate: a slice or a share is a fraction of a GPU."""
    mig = inventory.catalogue.model(candidate.pool.gpu_model).mig if strategy == MIG else None
    return gpu_equivalents(strategy, count, mig=mig, profile=candidate.profile,
                           replicas=candidate.pool.time_slicing_replicas or 1)


def dra_extended_resource(strategy: str, candidate: Candidate, answers: Answers) -> str | None:
    """The extended resource a DRA request is rendered with, when its pool's DeviceClass serves one for these
    devices; None keeps the claim template. A driver floor needs the claim's CEL selector (extended resources carry
    none); time-sliced and MPS requests keep their claim (the driver's sharing config, and so the MPS server, lives
    there: the claim the scheduler makes for an extended resource carries none, and MPS would silently become a
    plain whole GPU). On a Volcano cluster the claim stays too: Volcano v1.15.1 fits a pod's scalar resources against
    the node's allocatable only (`pkg/scheduler/api/node_info.go`, `actions/allocate/allocate.go` predicate), where
    DRA devices never appear, so a pod asking nvidia.com/gpu from DRA never fits (gangapi)."""
    if (answers.min_driver_major or strategy in REPLICATED
            or gangapi.dra_extended_resource_refusal(candidate.cluster.gang_scheduler)):
        return None
    name = candidate.profile.resource_name if strategy == MIG else "nvidia.com/gpu"
    return name if name in candidate.pool.dra_extended_resources else None


def _too_small_message(skipped: list[Skipped]) -> str:
    pools = "; ".join(f"{s.pool}: {s.why}" for s in skipped)
    change = "fewer replicas" if _field_to_change(skipped) == "replicas" else "fewer GPUs per replica"
    return (f"No pool can ever hold this request, even with nothing else running ({pools}). Ask for {change}, or "
            "ask the platform team for a bigger pool.")


def _field_to_change(skipped: list[Skipped]) -> str:
    return "replicas" if any(s.field == "replicas" for s in skipped) else "gpus_per_replica"


def _no_pool_message(strategy: str, answers: Answers, inventory: Inventory, driver: DriverNeed) -> str:
    per_device = answers.memory_per_device
    largest = max((inventory.catalogue.model(p.gpu_model).memory_gb for _, p in inventory.pools()
                   if p.gpu_model in inventory.catalogue.models), default=0)
    if not any(True for _ in inventory.pools()):
        return "No cluster has GPU pools yet; ask the platform team to declare one."
    if per_device > largest:
        return (
            f"{gb(per_device)} per GPU is more than the largest GPU here ({largest} GB). Use more GPUs per "
            "replica (memory is split across them) or less memory."
        )
    floor = f" with {driver.words()}" if driver.min_major else ""
    return (
        f"No pool offers a {STRATEGY_WORDS[strategy]}{floor} with {gb(per_device)} per GPU and "
        f"{plural(answers.gpus_per_replica, 'GPU')} on one node."
    )
