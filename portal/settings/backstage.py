"""The Backstage integration (intake.backstage) and the portal's public URL.

What each environment variable means: portal/configuration_meanings.py (docs/configuration.md)."""

import os

# --- Backstage integration (intake.backstage) --------------------------------------------------------------------
# The portal's public URL, for links in catalog entities, the software template and notifications (empty: the
# request's host where there is one, http://127.0.0.1:8000 in notifications).
PORTAL_BASE_URL = os.environ.get("PORTAL_BASE_URL", "").rstrip("/")
# Catalog namespace of the exported Resource entities, and of the Group entities that own them (one per team).
BACKSTAGE_NAMESPACE = os.environ.get("BACKSTAGE_NAMESPACE", "default")
BACKSTAGE_GROUP_NAMESPACE = os.environ.get("BACKSTAGE_GROUP_NAMESPACE", "default")
# Optional System entity the exported resources belong to.
BACKSTAGE_SYSTEM = os.environ.get("BACKSTAGE_SYSTEM", "")
# --- end of Backstage settings -----------------------------------------------------------------------------------
