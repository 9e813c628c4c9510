"""A default install runs in production mode: the settings' default, the image, the chart and compose all have
DEBUG off; only the quickstart scripts turn development mode on, explicitly."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from deploy.helmlite import render_objects
from tests.deploy.test_packaging import dockerfile_stages

ROOT = Path(__file__).resolve().parents[2]
SHOW = "from django.conf import settings; print(settings.DEBUG, settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE)"


def settings_without_debug(**env) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "DEBUG" and not k.startswith("PYTEST")}
    environment.update(DJANGO_SETTINGS_MODULE="portal.settings", PYTHONPATH=str(ROOT), **env)
    return subprocess.run([sys.executable, "-c", f"import django; django.setup(); {SHOW}"], cwd=ROOT,
                          env=environment, capture_output=True, text=True, timeout=60)


def test_without_a_debug_setting_the_portal_is_in_production_mode():
    result = settings_without_debug(SECRET_KEY="k" * 50)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True", "True"]
    # ... and so it refuses the built-in development key.
    refused = settings_without_debug(SECRET_KEY="")
    assert refused.returncode != 0 and "SECRET_KEY must be set" in refused.stderr


def test_the_image_the_chart_and_compose_say_debug_false():
    final_env = " ".join(line for line in dockerfile_stages()[-1] if line.upper().startswith("ENV "))
    assert re.search(r"\bDEBUG=false\b", final_env)
    chart = render_objects(ROOT / "deploy" / "helm" / "gpu-portal", release_name="portal", namespace="gpu")
    pods = [o["spec"]["template"]["spec"] for o in chart if o["kind"] == "Deployment"]
    pods += [o["spec"]["template"]["spec"] for o in chart if o["kind"] == "Job"]
    assert pods and all({"name": "DEBUG", "value": "false"} in c["env"] for p in pods for c in p["containers"])
    compose = (ROOT / "docker-compose.yml").read_text()
    assert re.search(r'^\s+DEBUG: "false"$', compose, re.M)


def test_only_the_quickstart_scripts_turn_development_mode_on():
    assert re.search(r"^export DEBUG=true$", (ROOT / "scripts" / "demo").read_text(), re.M)
    assert 'export DEBUG="${DEBUG:-true}"' in (ROOT / "scripts" / "test").read_text()


def test_a_published_example_key_is_refused():
    """`docker-compose up` without a .env reads .env.example (docker-compose.yml's default env_file), whose
    SECRET_KEY everyone can read: every container refuses to start with it."""
    compose = (ROOT / "docker-compose.yml").read_text()
    assert "env_file: ${PORTAL_ENV_FILE:-.env.example}" in compose
    example = dict(line.split("=", 1) for line in (ROOT / ".env.example").read_text().splitlines()
                   if "=" in line and not line.startswith("#"))
    refused = settings_without_debug(SECRET_KEY=example["SECRET_KEY"])
    assert refused.returncode != 0 and "published example key" in refused.stderr
    for key in ("insecure-local-development-key", "django-insecure-" + "x" * 50, "change-me"):
        assert settings_without_debug(SECRET_KEY=key).returncode != 0, key
