"""The image and the compose file: `docker-compose config -q` (compose 1.29) is clean, and the properties the issue
asks for hold (read from the files: there is no Docker engine to build or run them here)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = shutil.which("docker-compose")
needs_compose = pytest.mark.skipif(
    COMPOSE is None, reason="docker-compose is not installed (.ci/run installs it: apt-get install docker-compose)"
)


def compose(*args, env=None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "PORTAL_ENV_FILE"} | (env or {})
    return subprocess.run([COMPOSE, "-f", "docker-compose.yml", *args], cwd=ROOT, capture_output=True, text=True,
                          env=environment, timeout=120)


@needs_compose
def test_docker_compose_config_is_clean():
    result = compose("config", "-q")
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr


@pytest.fixture(scope="module")
def services():
    if COMPOSE is None:
        pytest.skip("docker-compose is not installed")
    result = compose("config")
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)["services"]


@needs_compose
def test_compose_runs_web_worker_beat_from_one_image_after_migrations(services):
    assert set(services) == {"migrate", "web", "worker", "beat", "postgres", "redis"}
    portal = ["migrate", "web", "worker", "beat"]
    assert {services[name]["image"] for name in portal} == {"gpu-golden-path-portal:latest"}
    assert services["web"]["command"].startswith("gunicorn portal.wsgi:application")
    assert services["worker"]["command"].startswith("celery -A portal worker")
    assert services["beat"]["command"].startswith("celery -A portal beat")
    for name in ("web", "worker", "beat"):
        assert services[name]["depends_on"] == {
            "migrate": {"condition": "service_completed_successfully"},
            "postgres": {"condition": "service_healthy"}, "redis": {"condition": "service_healthy"}}


@needs_compose
def test_compose_has_health_checks_volumes_and_hardening(services):
    for name in ("web", "worker", "beat", "postgres", "redis"):
        assert services[name]["healthcheck"]["test"], name
    assert "/readyz" in " ".join(services["web"]["healthcheck"]["test"])
    assert "portal-data:/var/lib/gpu-portal:rw" in services["worker"]["volumes"]
    assert any(v.startswith("postgres-data:") for v in services["postgres"]["volumes"])
    assert any(v.startswith("redis-data:") for v in services["redis"]["volumes"])
    for name in ("migrate", "web", "worker", "beat"):
        assert services[name]["read_only"] is True and services[name]["cap_drop"] == ["ALL"]


@needs_compose
def test_compose_takes_its_settings_from_an_env_file(tmp_path):
    env_file = tmp_path / "portal.env"
    env_file.write_text("DEBUG=false\nSECRET_KEY=from-my-own-env-file\nMETRICS_TOKEN=t0ken\n")
    result = compose("config", env={"PORTAL_ENV_FILE": str(env_file)})
    assert result.returncode == 0, result.stderr
    web = yaml.safe_load(result.stdout)["services"]["web"]["environment"]
    assert (web["SECRET_KEY"], web["METRICS_TOKEN"]) == ("from-my-own-env-file", "t0ken")


def test_env_example_lists_the_settings_the_deployment_needs():
    keys = {line.split("=", 1)[0] for line in (ROOT / ".env.example").read_text().splitlines()
            if line and not line.startswith("#")}
    assert {"DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "LOG_FORMAT", "METRICS_TOKEN", "OIDC_RP_CLIENT_ID",
            "OIDC_OP_DISCOVERY_URL", "OIDC_ROLE_GROUPS", "OIDC_TEAM_GROUP_PREFIX"} <= keys


def dockerfile_stages() -> list[list[str]]:
    """The Dockerfile's instructions (continuations joined), grouped by stage."""
    text = re.sub(r"\\\n\s*", " ", (ROOT / "Dockerfile").read_text())
    stages: list[list[str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        stages[-1].append(line)
    return stages


def test_dockerfile_is_multi_stage_with_a_lean_non_root_final_stage():
    build, final = dockerfile_stages()
    assert build[0].endswith(" AS build") and "build-essential" in " ".join(build)
    final_text = " ".join(final)
    for tool in ("build-essential", "gcc", "g++", "make ", "-dev "):
        assert tool not in final_text, f"{tool} in the final image"
    assert "COPY --from=build /opt/venv /opt/venv" in final
    assert "collectstatic" in " ".join(build) and "COPY --from=build /src/staticfiles /app/staticfiles" in final
    user = next(line for line in final if line.startswith("USER "))
    assert user.split()[1].split(":")[0] not in {"0", "root"}
    assert final[-1].startswith('CMD ["gunicorn", "portal.wsgi:application"')


def test_the_image_leaves_tests_and_deployment_files_out_but_keeps_the_gunicorn_settings():
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {"tests", "deploy", ".git", ".env"} <= set(ignored)
    # gunicorn reads ./gunicorn.conf.py (JSON logs, no duplicate access log) wherever it runs from /app.
    assert (ROOT / "gunicorn.conf.py").exists() and "gunicorn.conf.py" not in ignored
