"""The set-up scripts: where the demo listens, and that they never change a database password."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "scripts" / "lib.sh"


def _bash(script: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", f'source "{LIB}"; {script}'], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=60)


@pytest.mark.parametrize(("host", "bind", "url_host"), [
    ("", "127.0.0.1", "127.0.0.1"),
    ("0.0.0.0", "0.0.0.0", "127.0.0.1"),
    ("::", "[::]", "[::1]"),
    ("[::1]", "[::1]", "[::1]"),
    ("192.168.1.20", "192.168.1.20", "192.168.1.20"),
])
def test_demo_listens_on_loopback_unless_told_and_prints_an_address_a_browser_opens(host, bind, url_host):
    result = _bash('demo_address; echo "$BIND $URL_HOST"', {"HOST": host})  # "" counts as not given
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [bind, url_host]


def test_demo_passes_the_address_to_runserver_and_the_printed_url():
    demo = (ROOT / "scripts" / "demo").read_text()
    assert '0.0.0.0:$PORT' not in demo
    assert 'runserver "$BIND:$PORT"' in demo and "http://$URL_HOST:$PORT/" in demo


def test_a_refused_database_login_stops_with_how_to_give_a_password_and_changes_nothing(tmp_path):
    # Stand-ins for the services: both are "up", but psql refuses every login; su/sudo record any call.
    calls = tmp_path / "privileged-calls"
    fakes = {
        "pg_ctlcluster": "exit 0", "redis-server": "exit 0", "pg_isready": "exit 0", "redis-cli": "echo PONG",
        "psql": "echo 'psql: error: password authentication failed' >&2; exit 2",
        "su": f'echo "su $*" >> "{calls}"', "sudo": f'echo "sudo $*" >> "{calls}"',
    }
    for name, body in fakes.items():
        path = tmp_path / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    result = _bash("ensure_services; echo reached-the-end", {
        "PATH": f"{tmp_path}:{os.environ['PATH']}",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/gpu_portal_x",
    })
    assert result.returncode == 1
    assert "reached-the-end" not in result.stdout
    assert "DATABASE_URL=postgres://postgres:YOUR-PASSWORD@127.0.0.1:5432/gpu_portal" in result.stderr
    assert "Unix socket" in result.stderr
    assert not calls.exists(), calls.read_text()
