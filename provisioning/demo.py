"""The demo's declared clusters and pools (`declare_clusters --demo` and the quickstart's `load_demo`), in the
shape `cluster_declare()` takes."""
from .contract import DEFAULT_POOL_LABEL

CLUSTERS = [
    {
        "name": "gpu-east",
        "description": "Demo: H100 training, H200 MIG inference, L40S time-sliced notebooks",
        "kubernetes_version": "1.35",
        "scheduling_model": "device_plugin",
        "gang_scheduler": "volcano",
        "applier": "gitops",
        "pools": [
            {"name": "h100-train", "gpu_model": "H100-80GB", "node_count": 4, "gpus_per_node": 8,
             "sharing_mode": "exclusive", "driver_version": "570.124.06",
             "nvlink_domain": "7b968a6d-0c2e-4b1a-9c51-2f0e8d1b7e11.1",
             "node_selector": {DEFAULT_POOL_LABEL: "h100-train"},
             "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]},
            {"name": "h200-mig", "gpu_model": "H200-141GB", "node_count": 2, "gpus_per_node": 8,
             "sharing_mode": "mig", "mig_strategy": "mixed", "mig_layout": "all-balanced",
             "mig_readiness_label": True,  # mig-manager applies the layout (the simulated cluster plays it)
             "driver_version": "570.124.06", "node_selector": {DEFAULT_POOL_LABEL: "h200-mig"}},
            {"name": "a100-mig-small", "gpu_model": "A100-80GB", "node_count": 2, "gpus_per_node": 8,
             "sharing_mode": "mig", "mig_strategy": "mixed", "mig_layout": "all-1g.10gb",
             "mig_readiness_label": True,
             "driver_version": "550.90.07", "node_selector": {DEFAULT_POOL_LABEL: "a100-mig-small"}},
            {"name": "l40s-shared", "gpu_model": "L40S-48GB", "node_count": 2, "gpus_per_node": 4,
             "sharing_mode": "time_slicing", "time_slicing_replicas": 4, "time_slicing_renamed": True,
             "device_plugin_config": "ts-4", "driver_version": "550.90.07",
             "node_selector": {DEFAULT_POOL_LABEL: "l40s-shared"}},
        ],
    },
    {
        "name": "gpu-west",
        "description": "Demo: B200 on Dynamic Resource Allocation with the native Workload API",
        "kubernetes_version": "1.36",
        "scheduling_model": "dra",
        "gang_scheduler": "native",
        # Alpha and off on 1.36: the API and the gang plugin (gpu/gangapi.py).
        "feature_gates": ["GenericWorkload", "GangScheduling"],
        "applier": "gitops",
        "pools": [
            {"name": "b200-train", "gpu_model": "B200-180GB", "node_count": 2, "gpus_per_node": 8,
             "sharing_mode": "exclusive", "driver_version": "580.65.06",
             "nvlink_domain": "c0ffee00-1111-2222-3333-444455556666.1",
             "node_selector": {DEFAULT_POOL_LABEL: "b200-train"}},
        ],
    },
]
