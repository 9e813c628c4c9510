"""The decision in plain words, as the engineer reads it (stored with the decision, redrawn by pages)."""
from __future__ import annotations

from gpu.vocabulary import DRA, MIG, MPS, TIME_SLICING
from portal.text import plural

from ..words import GANG_BACKEND_WORDS
from .decision import Decision
from .priority import priority_words
from .inputs import Answers
from .reasons import capitalise, gb

AWAITING_APPROVAL = "after the platform team approves it"


def summarise(decision: Decision, answers: Answers | None = None, *, approval: str | None = None,
              marked_below: bool = False) -> str:
    """The decision in plain words, as the engineer reads it.

    The stored summary is written at submission, so it says how approval will go; a page showing a request later
    passes `approval` (what did happen), and `marked_below` only where the defaulted reasons are marked below it.
    """
    model = decision.gpu_model
    per = decision.gpus_per_replica
    if decision.scheduling_model == DRA and decision.strategy in (TIME_SLICING, MPS):
        # Each pod's DRA claim holds its GPU alone (steps.dra_share_words): a share in name only.
        how = "its processes time-sliced" if decision.strategy == TIME_SLICING else "an uncapped MPS server"
        what = (f"a whole {model}" if per == 1 else f"{per} whole {model} GPUs") + f" ({how}: a DRA share is a whole GPU)"
        memory = "the GPU is yours alone"
    elif decision.strategy == MIG:
        what = f"a hardware-isolated {decision.mig_profile} slice of an {model}"
        if per > 1:
            what = f"{per} hardware-isolated {decision.mig_profile} slices of {model} GPUs"
        memory = "your memory is isolated from other tenants"
    elif decision.strategy == TIME_SLICING:
        what = f"a time-sliced share of an {model}" if per == 1 else f"{per} time-sliced shares of {model} GPUs"
        memory = "memory is not isolated: other tenants on the same GPU can use it up and cause out-of-memory errors"
    elif decision.strategy == MPS:
        what = f"an MPS share of an {model}" if per == 1 else f"{per} MPS shares of {model} GPUs"
        limit = decision.memory_limit_gb
        memory = (f"memory is capped at {gb(limit)} per client by MPS" if limit else "memory is capped per client by MPS") + (
            ", compute is shared with other tenants and a crash of one client can stop the others")
    else:
        what = f"a whole {model}" if per == 1 else f"{per} whole {model} GPUs"
        memory = "the GPU is yours alone"
    parts = [what + (" per replica" if decision.replicas > 1 else ""), memory]
    if decision.replicas > 1:
        parts.append(f"{decision.replicas} replicas")
    if decision.gang:
        backend = decision.gang.backend
        parts.append(f"all {decision.gang.min_members} start together or not at all "
                     f"({GANG_BACKEND_WORDS.get(backend, backend)})")
    if decision.fabric_isolation == "tenant_exclusive":
        parts.append("no other tenant shares your NVLink domain")
    if decision.driver and decision.driver.branch:
        parts.append(f"only on nodes on the driver {decision.driver.branch} branch")
    elif decision.driver:
        parts.append(f"only on nodes with driver {decision.driver.min_major} or newer")
    if decision.priority:
        parts.append(priority_words(decision.priority))
    parts.append(f"on {decision.cluster}/{decision.node_pool}")
    if approval is None:
        approval = "approved automatically" if decision.auto_approve else AWAITING_APPROVAL
    parts.append(approval)
    defaults = sum(1 for r in decision.reasons if r.source == "default")
    if defaults:
        parts.append(f"{plural(defaults, 'choice')} came from defaults, not decisions"
                     + (" (marked below)" if marked_below else ""))
    return capitalise("; ".join(parts)) + "."
