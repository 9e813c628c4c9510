"""Idle GPUs from real utilisation (Prometheus, DCGM exporter) and right-sizing; see docs/idle-gpus.md."""
