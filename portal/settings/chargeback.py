"""Chargeback: MIG equivalents, report windows, the FOCUS export, and the idle-GPU scans.

What each environment variable means is written once, in portal/configuration_meanings.py (docs/configuration.md
is generated from it); a comment here says only why a setting is as it is."""

import os

# Chargeback: how a MIG slice converts to GPU equivalents ("compute" slices or "memory" fraction), and the
# longest report window the API accepts.
CHARGEBACK_MIG_EQUIVALENTS = os.environ.get("CHARGEBACK_MIG_EQUIVALENTS", "compute")
CHARGEBACK_MAX_REPORT_DAYS = int(os.environ.get("CHARGEBACK_MAX_REPORT_DAYS", "400"))
CHARGEBACK_FOCUS_PROVIDER = os.environ.get("CHARGEBACK_FOCUS_PROVIDER", "GPU Golden Path Portal")

# Idle GPUs (chargeback/idle/): how long each Prometheus query may take, and how far back a scan reads (the
# window of the utilisation and memory figures right-sizing is based on; at least the longest idle_after).
PORTAL_PROMETHEUS_TIMEOUT_SECONDS = float(os.environ.get("PORTAL_PROMETHEUS_TIMEOUT_SECONDS", "10"))
PORTAL_IDLE_LOOKBACK_SECONDS = int(os.environ.get("PORTAL_IDLE_LOOKBACK_SECONDS", "86400"))
