"""The broker's redelivery follows CELERY_VISIBILITY_TIMEOUT: kombu looks for unacknowledged messages of dead
workers every unacked_restore_interval x unacked_restore_throttle seconds, 100 s unless set, which made a 5 s
timeout mean "about 100 s" (found by tests/faults/test_worker_killed.py)."""
import runpy

import pytest

SETTINGS = "portal.settings.background"  # the module that reads CELERY_VISIBILITY_TIMEOUT, run afresh


# run_module runs the module afresh beside the one imported with the settings (which it says, harmlessly).
@pytest.mark.filterwarnings("ignore:'portal.settings.background' found in sys.modules:RuntimeWarning")
@pytest.mark.parametrize("visibility_timeout, restore_period", [("5", 1), ("60", 15), ("3600", 100)])
def test_dead_workers_messages_are_looked_for_within_the_visibility_timeout(
    monkeypatch, visibility_timeout, restore_period
):
    monkeypatch.setenv("CELERY_VISIBILITY_TIMEOUT", visibility_timeout)
    options = runpy.run_module(SETTINGS)["CELERY_BROKER_TRANSPORT_OPTIONS"]
    assert options["visibility_timeout"] == int(visibility_timeout)
    assert options["unacked_restore_interval"] * options["unacked_restore_throttle"] == restore_period
