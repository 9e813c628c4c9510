"""The vocabulary, defined once and free of Django: request strategies, the pool sharing modes that serve them,
how GFD and the NVIDIA device plugin name the shared ones, scheduling models, gang backends, workload classes,
request statuses, and the fit check's verdicts. The TextChoices (`provisioning.choices`, `intake.choices`), the
decision function, the renderer, discovery, reconciliation, policy validation and metering all read these names.

MPS is its own mode, not a kind of time-slicing (NVIDIA/k8s-device-plugin v0.20.0 `api/config/v1/sharing.go`:
`sharing.mps` beside `sharing.timeSlicing`; GFD writes `nvidia.com/gpu.sharing-strategy=mps`): the MPS control
daemon caps each client at an equal share of the GPU's memory and compute, time-slicing caps nothing.
"""
from __future__ import annotations

WHOLE_GPU, MIG, TIME_SLICING, MPS = "whole_gpu", "mig", "time_slicing", "mps"
STRATEGIES = (WHOLE_GPU, MIG, TIME_SLICING, MPS)

EXCLUSIVE = "exclusive"
SHARING_MODES = (EXCLUSIVE, MIG, TIME_SLICING, MPS)
SHARING_MODE_FOR_STRATEGY = {WHOLE_GPU: EXCLUSIVE, MIG: MIG, TIME_SLICING: TIME_SLICING, MPS: MPS}
STRATEGY_FOR_SHARING_MODE = {mode: strategy for strategy, mode in SHARING_MODE_FOR_STRATEGY.items()}

# Modes in which the device plugin advertises each GPU `replicas` times: a share is 1/replicas of a GPU.
REPLICATED = frozenset({TIME_SLICING, MPS})

# `nvidia.com/gpu.sharing-strategy` values GFD writes (k8s-device-plugin v0.20.0 `api/config/v1/sharing.go`).
GFD_SHARING_STRATEGY = {TIME_SLICING: "time-slicing", MPS: "mps"}
MODE_FOR_GFD_SHARING_STRATEGY = {label: mode for mode, label in GFD_SHARING_STRATEGY.items()}

# Memory isolation each strategy gives (intake.choices.MemoryIsolation values).
MEMORY_ISOLATION = {WHOLE_GPU: "exclusive", MIG: "hardware", TIME_SLICING: "none", MPS: "limited"}

# Words people read: "a <words>" in decisions and reasons, the adjective in quota and capacity messages.
STRATEGY_WORDS = {WHOLE_GPU: "whole GPU", MIG: "MIG slice", TIME_SLICING: "time-sliced GPU share", MPS: "MPS GPU share"}
STRATEGY_ADJECTIVES = {WHOLE_GPU: "whole-GPU", MIG: "MIG", TIME_SLICING: "time-sliced", MPS: "MPS"}
SHARE_UNITS = {TIME_SLICING: "time-sliced share", MPS: "MPS share"}

# The fit check's verdicts (provisioning.choices.FitVerdict): intake's approval reads them, provisioning's fit writes.
FITS_NOW, FITS_AFTER, NEVER_FITS = "fits_now", "fits_after", "never"

# How pods ask for GPUs (provisioning.choices.SchedulingModel); discovery may find a node offering both at once
# (provisioning.choices.SchedulingModelSeen), which is a conflict.
DEVICE_PLUGIN, DRA, BOTH = "device_plugin", "dra", "both"
SCHEDULING_MODELS = (DEVICE_PLUGIN, DRA)

# Gang scheduling backends a cluster declares (provisioning.choices.GangScheduler); `none` gang-schedules nothing.
VOLCANO, KAI, KUEUE, NATIVE, NO_GANG_SCHEDULER = "volcano", "kai", "kueue", "native", "none"
GANG_SCHEDULERS = (VOLCANO, KAI, KUEUE, NATIVE)
GANG_BACKENDS = (*GANG_SCHEDULERS, NO_GANG_SCHEDULER)

# Workload classes (intake.choices.WorkloadClass, the questionnaire's first question).
TRAINING, INFERENCE, DEVELOPMENT = "training", "inference", "development"
WORKLOAD_CLASSES = (TRAINING, INFERENCE, DEVELOPMENT)

# Request statuses, the request state machine's names (intake.choices.RequestStatus; DESIGN.md).
PENDING_APPROVAL, APPROVED, REJECTED = "pending_approval", "approved", "rejected"
PROVISIONING, RUNNING, STALLED = "provisioning", "running", "stalled"
COMPLETED, FAILED, CANCELLED = "completed", "failed", "cancelled"
REQUEST_STATUSES = (PENDING_APPROVAL, APPROVED, REJECTED, PROVISIONING, RUNNING, STALLED, COMPLETED, FAILED, CANCELLED)
REQUEST_TERMINAL = frozenset({REJECTED, COMPLETED, FAILED, CANCELLED})
# Requests that hold their GPUs (and count against the team's quota) until they end.
REQUEST_HOLDING = (APPROVED, PROVISIONING, RUNNING, STALLED)

# Priority tiers a policy rule may give a workload class (intake.policy "priority"), highest first, with the value
# of the PriorityClass (scheduling.k8s.io/v1) each is rendered as (provisioning/manifests/priority.py). Values are
# far below the system classes (2000000000+) and the 1000000000 ceiling of user classes, and spaced so a platform
# team can slot its own classes between them.
PRODUCTION_INFERENCE, TRAINING_TIER, DEVELOPMENT_TIER = "production-inference", "training", "development"
PRIORITY_TIERS = (PRODUCTION_INFERENCE, TRAINING_TIER, DEVELOPMENT_TIER)
PRIORITY_VALUES = {PRODUCTION_INFERENCE: 100000, TRAINING_TIER: 10000, DEVELOPMENT_TIER: 1000}
PRIORITY_TIER_WORDS = {PRODUCTION_INFERENCE: "production inference", TRAINING_TIER: "training",
                       DEVELOPMENT_TIER: "development"}
# Kubernetes' default terminationGracePeriodSeconds: what a pod gets after SIGTERM when nothing decides otherwise.
KUBERNETES_DEFAULT_GRACE_SECONDS = 30
