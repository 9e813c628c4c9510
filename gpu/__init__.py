"""What the portal knows about GPUs on Kubernetes, free of Django: the sharing vocabulary, the GPU catalogue
(models, MIG profiles and layouts, shipped in `gpu/data/`) and what each gang backend can do per Kubernetes minor.
The bottom layer: intake, provisioning and the pure renderer all read it; it imports nothing of the portal."""
