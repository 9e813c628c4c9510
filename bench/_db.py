"""Shared set-up for the benchmarks: a dedicated PostgreSQL database (created and dropped by the script), the
real schema migrated into it, Django configured against it."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
BENCH_DB = os.environ.get("BENCH_DATABASE", "portal_bench")


def server_url() -> str:
    url = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/gpu_portal")
    return url.rsplit("/", 1)[0]


def bench_url() -> str:
    return f"{server_url()}/{BENCH_DB}"


def recreate_database() -> None:
    with psycopg.connect(f"{server_url()}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{BENCH_DB}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{BENCH_DB}"')


def drop_database() -> None:
    from django.db import connections

    connections.close_all()
    with psycopg.connect(f"{server_url()}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{BENCH_DB}" WITH (FORCE)')


def setup_django(*, fresh: bool = True) -> None:
    """Point Django at a fresh bench database (or, with fresh=False, the one left by --keep) and migrate it."""
    if fresh:
        recreate_database()
    os.environ["DATABASE_URL"] = bench_url()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    os.environ.setdefault("DEBUG", "true")  # a local benchmark: development mode, explicitly (settings default to production)
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
