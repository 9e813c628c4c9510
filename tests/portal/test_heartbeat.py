"""The worker's and beat's probes, run for real: the chart's own command lines start a Celery worker and beat
(in-memory broker, so nothing reaches a queue other tests use), their heartbeat files appear, and the chart's
probe commands pass on a fresh file and fail on a missing or stale one."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deploy.helmlite import render_objects

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "gpu-portal"
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.slow


def container(component):
    (deployment,) = [o for o in render_objects(CHART, release_name="portal")
                     if o["kind"] == "Deployment" and o["metadata"]["name"] == f"portal-{component}"]
    return deployment["spec"]["template"]["spec"]["containers"][0]


def local(argv, replacements):
    """A container's command line, runnable here: our interpreter and celery, paths moved into tmp."""
    programs = {"python": sys.executable, "celery": str(BIN / "celery")}
    out = [programs.get(argv[0], argv[0]), *argv[1:]]
    for old, new in replacements.items():
        out = [new if part == old else part for part in out]
    return out


def probe(probe_spec, replacements) -> subprocess.CompletedProcess:
    return subprocess.run(local(probe_spec["exec"]["command"], replacements), cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def wait_for(predicate, process, timeout=90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        assert process.poll() is None, f"the process exited ({process.returncode}):\n{process.log.read_text()}"
        time.sleep(0.2)
    raise AssertionError("timed out")


def start(argv, env_extra, tmp_path):
    env = {**os.environ, "CELERY_BROKER_URL": "memory://", **env_extra}
    log = tmp_path / "process.log"
    with log.open("w") as out:  # a file, not a pipe: a full pipe would block the process
        process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    process.log = log
    return process


def stop(process):
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def age(path, seconds):
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))


def test_the_worker_touches_its_heartbeat_file_and_the_liveness_probe_reads_it(tmp_path):
    worker = container("worker")
    heartbeat = tmp_path / "worker-heartbeat"
    moved = {"/tmp/worker-heartbeat": str(heartbeat)}
    liveness = worker["livenessProbe"]
    assert probe(liveness, moved).returncode == 1  # no file yet: not alive
    heartbeat.touch()
    age(heartbeat, 3600)
    assert probe(liveness, moved).returncode == 1  # a stale file: a hung worker
    heartbeat.unlink()

    # The chart's worker command, solo pool (no forks in a test), touching every second instead of 30.
    argv = [*local(worker["args"], moved), "--pool", "solo", "--heartbeat-interval", "1"]
    process = start(argv, {}, tmp_path)
    try:
        wait_for(heartbeat.exists, process)
        result = probe(liveness, moved)
        assert result.returncode == 0, result.stderr
        # The worker's timer keeps touching it, not only at start: a file made stale becomes fresh again.
        age(heartbeat, 3600)
        wait_for(lambda: time.time() - heartbeat.stat().st_mtime < 60, process)
        assert probe(liveness, moved).returncode == 0
    finally:
        stop(process)


def test_beat_touches_its_heartbeat_file_on_every_tick(tmp_path):
    beat = container("beat")
    env = {e["name"]: e["value"] for e in beat["env"] if "value" in e}
    heartbeat = tmp_path / "beat-heartbeat"
    moved = {env["BEAT_HEARTBEAT_FILE"]: str(heartbeat), "/tmp/celerybeat-schedule": str(tmp_path / "schedule")}
    assert "portal.heartbeat:HeartbeatScheduler" in beat["args"]
    process = start(local(beat["args"], moved), {"BEAT_HEARTBEAT_FILE": str(heartbeat)}, tmp_path)
    try:
        wait_for(heartbeat.exists, process)
        for spec in (beat["livenessProbe"], beat["readinessProbe"]):
            result = probe(spec, moved)
            assert result.returncode == 0, result.stderr
    finally:
        stop(process)
    age(heartbeat, 3600)  # beat stopped: nothing touches the file any more
    result = probe(beat["livenessProbe"], moved)
    assert result.returncode == 1 and "s old" in result.stderr


def test_beat_refuses_to_start_without_a_heartbeat_file(tmp_path):
    argv = [str(BIN / "celery"), "-A", "portal", "beat", "-s", str(tmp_path / "schedule"),
            "--scheduler", "portal.heartbeat:HeartbeatScheduler"]
    env = {k: v for k, v in os.environ.items() if k != "BEAT_HEARTBEAT_FILE"}
    result = subprocess.run(argv, cwd=ROOT, env={**env, "CELERY_BROKER_URL": "memory://"}, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode != 0 and "BEAT_HEARTBEAT_FILE" in result.stdout + result.stderr
