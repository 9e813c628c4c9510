"""The Backstage integration (intake.backstage) and the portal's public URL.

What each environment variable means is written once, in portal/configuration_meanings.py (docs/configuration.md
is generated from it); a comment here says only why a setting is as it is."""

import os

# --- Backstage integration (intake.backstage) --------------------------------------------------------------------
PORTAL_BASE_URL = os.environ.get("PORTAL_BASE_URL", "").rstrip("/")
BACKSTAGE_NAMESPACE = os.environ.get("BACKSTAGE_NAMESPACE", "default")
BACKSTAGE_GROUP_NAMESPACE = os.environ.get("BACKSTAGE_GROUP_NAMESPACE", "default")
BACKSTAGE_SYSTEM = os.environ.get("BACKSTAGE_SYSTEM", "")
# --- end of Backstage settings -----------------------------------------------------------------------------------
