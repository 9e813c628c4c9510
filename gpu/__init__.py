"""What the portal knows about GPUs on Kubernetes, free of Django: the sharing vocabulary, the GPU catalogue
(models, MIG profiles and layouts, shipped in `gpu/data/`), what each gang backend can do per Kubernetes minor, and
the node pool as plain values (`pools.PoolSpec`).
The bottom layer: intake, provisioning and the pure renderer all read it; it imports nothing of the portal."""
