"""Talking to clusters: the in-cluster identity, timeouts and retries, labels, MIG plans, status reconciliation
and stalled gangs.

What each environment variable means is written once, in portal/configuration_meanings.py (docs/configuration.md
is generated from it); a comment here says only why a setting is as it is."""

import os
from pathlib import Path

from .base import BASE_DIR

PORTAL_DATA_DIR = Path(os.environ.get("PORTAL_DATA_DIR", BASE_DIR / "var"))
# The portal's own pod identity (credential source "in_cluster", and reading Secrets for source "secret"): its
# API server (from the variables every pod gets) and the service-account files the kubelet keeps rotated.
_service_host = os.environ.get("KUBERNETES_SERVICE_HOST", "")
_service_port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
PORTAL_IN_CLUSTER_SERVER = os.environ.get("PORTAL_IN_CLUSTER_SERVER") or (
    f"https://{'[' + _service_host + ']' if ':' in _service_host else _service_host}:{_service_port}"
    if _service_host else ""
)
PORTAL_IN_CLUSTER_TOKEN_FILE = os.environ.get(
    "PORTAL_IN_CLUSTER_TOKEN_FILE", "/var/run/secrets/kubernetes.io/serviceaccount/token"
)
PORTAL_IN_CLUSTER_CA_FILE = os.environ.get(
    "PORTAL_IN_CLUSTER_CA_FILE", "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
)
PORTAL_KUBE_TIMEOUT_SECONDS = float(os.environ.get("PORTAL_KUBE_TIMEOUT_SECONDS", "20"))
PORTAL_KUBE_RETRY_BASE_SECONDS = float(os.environ.get("PORTAL_KUBE_RETRY_BASE_SECONDS", "5"))
PORTAL_LABEL_DOMAIN = os.environ.get("PORTAL_LABEL_DOMAIN", "gpu-portal.io")
# --- MIG plans ---
# Defaults of a new plan: how long a cordoned node waits for its GPU pods, and for mig-manager to report.
PORTAL_MIG_DRAIN_TIMEOUT_SECONDS = int(os.environ.get("PORTAL_MIG_DRAIN_TIMEOUT_SECONDS", "3600"))
PORTAL_MIG_RECONFIGURE_TIMEOUT_SECONDS = int(os.environ.get("PORTAL_MIG_RECONFIGURE_TIMEOUT_SECONDS", "900"))
# --- status reconciliation, stalled gangs and notifications (reconcile) ----------------------------------------
# Beat runs one reconciliation per cluster every interval: a LIST (first run, fallback) or a resumed WATCH,
# bounded well below the interval so runs never overlap (a per-cluster Redis lock makes sure of it).
PORTAL_RECONCILE_INTERVAL_SECONDS = float(os.environ.get("PORTAL_RECONCILE_INTERVAL_SECONDS", "60"))
PORTAL_RECONCILE_WATCH_SECONDS = int(os.environ.get("PORTAL_RECONCILE_WATCH_SECONDS", "45"))
PORTAL_ADMISSION_SYNC_SECONDS = float(os.environ.get("PORTAL_ADMISSION_SYNC_SECONDS", "15"))
# ... and how long Kueue keeps a Workload waiting for approval out of its queue after the check released its quota
# (Retry's requeueAfterSeconds): the longest an approved found request waits for its requeue.
PORTAL_ADMISSION_RETRY_SECONDS = int(os.environ.get("PORTAL_ADMISSION_RETRY_SECONDS", "60"))
PORTAL_RECONCILE_RELIST_SECONDS = float(os.environ.get("PORTAL_RECONCILE_RELIST_SECONDS", "600"))
PORTAL_RECONCILE_LIST_PAGE_SIZE = int(os.environ.get("PORTAL_RECONCILE_LIST_PAGE_SIZE", "500"))
# A pod that cannot pull its image for this long fails its request (and its objects are removed).
PORTAL_RECONCILE_IMAGE_PULL_FAIL_AFTER_SECONDS = int(
    os.environ.get("PORTAL_RECONCILE_IMAGE_PULL_FAIL_AFTER_SECONDS", "600")
)
PORTAL_RECONCILE_NO_PODS_FAIL_AFTER_SECONDS = int(os.environ.get("PORTAL_RECONCILE_NO_PODS_FAIL_AFTER_SECONDS", "3600"))
PORTAL_GANG_STALL_AFTER_SECONDS = int(os.environ.get("PORTAL_GANG_STALL_AFTER_SECONDS", "900"))
