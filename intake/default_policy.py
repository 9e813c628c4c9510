"""The default routing policy (version 1), as data. Loaded by a data migration; the platform team changes the
policy by creating new versions in the admin, never by editing this file."""

DEFAULT_OWNER = "platform-team"

DEFAULT_RULES = [
    {
        "key": "training-dedicated-batch",
        "kind": "route",
        "position": 10,
        "match": {"workload_class": ["training"], "tenancy": ["dedicated"], "latency": ["batch"]},
        "outcome": {"strategy": "whole_gpu", "gang": True},
        "rationale": "dedicated batch training needs all of a GPU's memory and compute with no neighbours, "
        "and a multi-pod job must start all-or-nothing.",
    },
    {
        "key": "inference-shared-latency",
        "kind": "route",
        "position": 20,
        "match": {"workload_class": ["inference"], "tenancy": ["multi_tenant"], "latency": ["latency_sensitive"]},
        "outcome": {"strategy": "mig", "fallback_strategy": "whole_gpu"},
        "rationale": "latency-sensitive inference that shares hardware gets a hardware-isolated MIG slice, "
        "so a neighbour can neither slow it down nor run it out of memory.",
    },
    {
        "key": "development-standard",
        "kind": "route",
        "position": 30,
        "match": {"workload_class": ["development"], "data_sensitivity": ["standard"]},
        "outcome": {"strategy": "time_slicing", "auto_approve": True,
                    "auto_approve_limits": {"per_request": 1, "per_team": 2}},
        "rationale": "interactive development is idle most of the time; a time-sliced share is cheap and "
        "is approved without waiting.",
    },
    {
        "key": "development-regulated",
        "kind": "route",
        "position": 40,
        "match": {"workload_class": ["development"], "data_sensitivity": ["regulated"]},
        "outcome": {"strategy": "mig", "fallback_strategy": "whole_gpu", "auto_approve": True,
                    "auto_approve_limits": {"per_request": 1, "per_team": 2}},
        "rationale": "development on regulated data gets a hardware-isolated MIG slice, approved without waiting.",
    },
    {
        "key": "regulated-never-time-sliced",
        "kind": "guardrail",
        "position": 100,
        "match": {"data_sensitivity": ["regulated"]},
        "outcome": {"forbid_strategies": ["time_slicing"], "replace_with": "mig"},
        "rationale": "regulated data is never time-sliced: time-sliced tenants share GPU memory with no isolation.",
    },
    {
        "key": "regulated-multitenant-fabric",
        "kind": "guardrail",
        "position": 110,
        "match": {"data_sensitivity": ["regulated"], "tenancy": ["multi_tenant"]},
        "outcome": {"fabric_isolation": "tenant_exclusive"},
        "rationale": "regulated multi-tenant work must not share an NVLink fabric with other tenants.",
    },
    {
        "key": "development-lease",
        "kind": "guardrail",
        "position": 120,
        "match": {"workload_class": ["development"]},
        "outcome": {"lease": {"default_hours": 168, "max_hours": 168}},
        "rationale": "a development share forgotten after the work is done still bills; it lasts a week at a time "
        "unless its owner extends it.",
    },
    {
        "key": "inference-priority",
        "kind": "guardrail",
        "position": 130,
        "match": {"workload_class": ["inference"]},
        "outcome": {"priority": {"tier": "production-inference", "preemptible": False, "grace_seconds": 60}},
        "rationale": "inference serves users who are waiting: it is never stopped to make room for other work, and "
        "may preempt training and development when GPUs run out; a minute lets it drain open requests.",
    },
    {
        "key": "training-priority",
        "kind": "guardrail",
        "position": 140,
        "match": {"workload_class": ["training"]},
        "outcome": {"priority": {"tier": "training", "preemptible": True, "min_runtime_minutes": 120,
                                 "grace_seconds": 600}},
        "rationale": "training checkpoints and resumes: it yields GPUs to production inference, but only after "
        "two hours of progress (where the scheduler can hold that), with ten minutes after SIGTERM to write a "
        "checkpoint.",
    },
    {
        "key": "development-priority",
        "kind": "guardrail",
        "position": 150,
        "match": {"workload_class": ["development"]},
        "outcome": {"priority": {"tier": "development", "preemptible": True, "preempts": False,
                                 "grace_seconds": 300}},
        "rationale": "an interactive notebook is the cheapest work to restart: it yields to everything else at any "
        "time with five minutes to save, and never preempts anyone's job itself.",
    },
]
