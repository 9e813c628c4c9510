"""The production configuration, run the way the image runs it: `check --deploy` is clean, and gunicorn with
DEBUG off serves health, readiness (database and broker really unreachable) and whitenoise static files."""
from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from cryptography.fernet import Fernet
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).with_name("gunicorn")
UNREACHABLE_DATABASE = "postgres://postgres@127.0.0.1:1/portal"  # nothing listens on port 1
UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"


def production_env(tmp_path: Path, **overrides) -> dict[str, str]:
    # Test-only switches (the browser tests' DJANGO_ALLOW_ASYNC_UNSAFE) are not part of a production environment.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST", "DJANGO_SETTINGS")) and k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env.update(
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1,portal.example.com",
        STATIC_ROOT=str(tmp_path / "static"),
        DATABASE_URL=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gpu_portal"),
        REDIS_URL=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
        LOG_FORMAT="json",
        METRICS_TOKEN="prometheus-token",
        PORTAL_CREDENTIAL_KEYS=Fernet.generate_key().decode(),
        PYTHONPATH=str(ROOT),
    )
    env.update(overrides)
    return env


def run_manage(env, *args, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_check_deploy_is_clean_with_debug_off(tmp_path):
    result = run_manage(production_env(tmp_path), "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_fails_without_credential_keys(tmp_path):
    result = run_manage(production_env(tmp_path, PORTAL_CREDENTIAL_KEYS=""), "check", "--deploy")
    assert result.returncode != 0 and "portal.E001" in result.stderr + result.stdout


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    result = run_manage(production_env(tmp_path, SECRET_KEY=""), "check")
    assert result.returncode != 0 and "SECRET_KEY must be set" in result.stderr


@pytest.fixture(scope="module")
def collected_static(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("prod")
    result = run_manage(production_env(tmp_path), "collectstatic", "--no-input", "-v0", timeout=300)
    assert result.returncode == 0, result.stderr
    return tmp_path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Gunicorn:
    def __init__(self, env):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [str(GUNICORN), "portal.wsgi:application", "--bind", f"127.0.0.1:{self.port}", "--workers", "1",
             "--timeout", "30"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"gunicorn exited: {self.process.stdout.read()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise AssertionError("gunicorn did not start")

    def get(self, path, **kwargs):
        # Behind the ingress: TLS is terminated there and announced with X-Forwarded-Proto.
        headers = {"X-Forwarded-Proto": "https", "Host": "portal.example.com", **kwargs.pop("headers", {})}
        return requests.get(self.url + path, headers=headers, timeout=20, allow_redirects=False, **kwargs)

    def stop(self) -> str:
        if hasattr(self, "output"):
            return self.output
        self.process.terminate()
        try:
            output, _ = self.process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            output, _ = self.process.communicate()
        self.output = output
        return output


@pytest.fixture
def gunicorn(collected_static, db):
    servers = []

    def start(**overrides):
        # The real test database (created by pytest-django) so a healthy server finds its tables.
        env = production_env(collected_static, **{"DATABASE_URL": test_database_url(), **overrides})
        server = Gunicorn(env)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def test_database_url():
    db = connection.settings_dict
    user = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{user}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


test_database_url.__test__ = False  # a helper, not a test


def test_healthy_server_is_live_and_ready_and_serves_static_files_with_whitenoise(gunicorn):
    server = gunicorn()
    assert server.get("/healthz").json() == {"status": "ok"}
    ready = server.get("/readyz")
    assert ready.status_code == 200 and ready.json()["checks"] == {"database": "ok", "broker": "ok"}
    assert ready.headers["X-Request-ID"]
    # The kubelet and Prometheus call pods by IP over plain HTTP: probe endpoints answer any Host, unredirected,
    # while every other page keeps the Host check and the HTTPS redirect.
    for path in ("/healthz", "/readyz", "/metrics"):
        direct = requests.get(server.url + path, timeout=10, allow_redirects=False,
                              headers={"Host": "10.1.2.3:8000", "Authorization": "Bearer prometheus-token"})
        assert direct.status_code == 200, (path, direct.status_code)
    assert requests.get(server.url + "/accounts/login/", headers={"Host": "10.1.2.3:8000"}, timeout=10,
                        allow_redirects=False).status_code == 400
    assert requests.get(server.url + "/accounts/login/", headers={"Host": "portal.example.com"}, timeout=10,
                        allow_redirects=False).status_code == 301

    # Pages link the hashed names of CompressedManifestStaticFilesStorage; whitenoise serves them forever-cached.
    page = server.get("/accounts/login/").text
    hashed = page.split('href="/static/portal/portal.')[1].split('"')[0]
    static = server.get(f"/static/portal/portal.{hashed}", headers={"Accept-Encoding": "gzip"})
    assert static.status_code == 200 and "text/css" in static.headers["Content-Type"]
    assert "immutable" in static.headers["Cache-Control"] and static.headers.get("Content-Encoding") == "gzip"

    # gunicorn.conf.py: with LOG_FORMAT=json every line is JSON, gunicorn's own and the portal's access log.
    lines = [json.loads(line) for line in server.stop().splitlines() if line.strip()]
    assert any(line["logger"] == "gunicorn.error" for line in lines)
    access = [line for line in lines if line["logger"] == "portal.access"]
    assert {"path": "/readyz", "status": 200, "request_id": ready.headers["X-Request-ID"]}.items() <= next(
        line for line in access if line["path"] == "/readyz").items()


def test_readyz_is_503_and_names_the_database_when_it_is_unreachable(gunicorn):
    server = gunicorn(DATABASE_URL=UNREACHABLE_DATABASE)
    assert server.get("/healthz").status_code == 200  # liveness does not depend on the database
    response = server.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    # Anonymous probes learn only which component is down; the error itself is logged.
    assert body == {"status": "not ready", "checks": {"database": "not ok", "broker": "ok"}}
    assert "OperationalError" in server.stop()


def test_readyz_is_503_and_names_the_broker_when_it_is_unreachable(gunicorn):
    server = gunicorn(REDIS_URL=UNREACHABLE_REDIS)
    assert server.get("/healthz").status_code == 200
    response = server.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"] == {"database": "ok", "broker": "not ok"}
    assert "ConnectionError" in server.stop()
