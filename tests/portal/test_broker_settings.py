"""The broker's redelivery follows CELERY_VISIBILITY_TIMEOUT: kombu looks for unacknowledged messages of dead
workers every unacked_restore_interval x unacked_restore_throttle seconds, 100 s unless set, which made a 5 s
timeout mean "about 100 s" (found by tests/faults/test_worker_killed.py)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def transport_options(visibility_timeout: str) -> dict:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "portal.settings", "CELERY_VISIBILITY_TIMEOUT": visibility_timeout}
    code = "import json; from django.conf import settings; print(json.dumps(settings.CELERY_BROKER_TRANSPORT_OPTIONS))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


@pytest.mark.parametrize("visibility_timeout, restore_period", [("5", 1), ("60", 15), ("3600", 100)])
def test_dead_workers_messages_are_looked_for_within_the_visibility_timeout(visibility_timeout, restore_period):
    options = transport_options(visibility_timeout)
    assert options["visibility_timeout"] == int(visibility_timeout)
    assert options["unacked_restore_interval"] * options["unacked_restore_throttle"] == restore_period
