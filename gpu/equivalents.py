"""GPU equivalents: how much of a GPU some devices are, the one unit quota, chargeback, capacity and auto-approval
caps count in. The decision writes them per request, the renderer puts them on each pod, metering checks each
pod's annotation against them, and the inventory counts capacity in them: all through `gpu_equivalents()`.

A whole GPU is 1; a MIG slice its compute slices over the GPU's (or its memory fraction, under chargeback's
`memory` policy); a time-sliced or MPS share 1/replicas of its GPU.
"""
from __future__ import annotations

from fractions import Fraction

from .catalogue import MigProfileSpec, MigSpec, mig_equivalents
from .vocabulary import MIG, REPLICATED, WHOLE_GPU


def gpu_equivalents(strategy: str, devices: int, *, mig: MigSpec | None = None,
                    profile: MigProfileSpec | None = None, replicas: int | None = None,
                    policy: str = "compute") -> Fraction | None:
    """GPU equivalents of `devices` devices of a strategy; None when they cannot be known (a MIG profile or a
    share's replica count not given, or a strategy nobody knows)."""
    if strategy == WHOLE_GPU:
        return Fraction(devices)
    if strategy == MIG:
        if mig is None or profile is None:
            return None
        return devices * mig_equivalents(profile, mig, policy=policy)
    if strategy in REPLICATED:
        if not replicas:
            return None
        return Fraction(devices, replicas)
    return None
