"""Private services and a running portal for fault tests.

A Redis and a PostgreSQL cluster of our own (never the shared ones other test runs use), and the portal's real
processes (gunicorn with 2 workers, a Celery worker, Celery beat) as subprocesses pointed at them, so that a test
can stop, kill and restart any of them:

    redis, postgres = PrivateRedis(tmp), PrivatePostgres()
    redis.start(); postgres.init(); postgres.start()
    stack = PortalStack(tmp, redis=redis, postgres=postgres, kube_url=fake_kube.url)
    stack.start()                      # migrate, bootstrap with the management commands, web + worker + beat
    created = stack.api("alice").post("/api/v1/requests/", {...})
    stack.query("select status from intake_gpurequest where id = %s", [created.json["id"]])
    stack.close(); postgres.close(); redis.close()

Every wait is bounded (`wait_until`); every process runs in its own process group and is reaped by `stop()`/
`close()`, also after a failure. User actions go over HTTP with API tokens; assertions read the private database
directly (the subprocesses own it).
"""
from __future__ import annotations

import glob
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import psycopg
from cryptography.fernet import Fernet

from kubesim.tls import test_ca

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def free_port() -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_until(predicate: Callable[[], T], *, timeout: float, interval: float = 0.1, message: str = "condition") -> T:
    """Poll until `predicate()` is truthy and return it; AssertionError after `timeout` seconds. An exception
    raised by the predicate counts as "not yet" (services are expected to be unreachable while they start)."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001
            last_error = exc
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_error!r})" if last_error else ""
            raise AssertionError(f"timed out after {timeout}s waiting for {message}{detail}")
        time.sleep(interval)


def tail(path: Path, lines: int = 80) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class Process:
    """A subprocess in its own process group (so a kill reaches its children too), output appended to a log."""

    def __init__(self, name: str, argv: Sequence[str], *, log_path: Path, env: dict | None = None,
                 cwd: Path | None = None) -> None:
        self.name, self.argv, self.log_path, self.env, self.cwd = name, list(argv), log_path, env, cwd
        self.popen: subprocess.Popen | None = None
        self._log = None

    def start(self) -> Process:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._log.write(f"\n=== {time.strftime('%H:%M:%S')} start: {' '.join(self.argv)}\n".encode())
        self._log.flush()
        self.popen = subprocess.Popen(self.argv, stdout=self._log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, env=self.env, cwd=self.cwd, start_new_session=True)
        return self

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    @property
    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def signal_group(self, sig: int) -> None:
        if self.popen is None:
            return
        try:
            os.killpg(self.popen.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def kill(self) -> None:
        """SIGKILL the whole process group, now (no shutdown handlers run)."""
        self.signal_group(signal.SIGKILL)
        self._reap(timeout=10)

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM the group, wait, SIGKILL what is left."""
        if self.alive:
            self.signal_group(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        self.signal_group(signal.SIGKILL)  # children that outlived their parent
        self._reap(timeout=10)

    def _reap(self, timeout: float) -> None:
        if self.popen is not None:
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def children(self) -> list[int]:
        """Pids of the direct children (e.g. gunicorn's or Celery's pool workers), from /proc."""
        if not self.alive:
            return []
        try:
            return sorted(int(pid) for pid in Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split())
        except OSError:
            return []


# --- Redis ------------------------------------------------------------------------------------------------------


class PrivateRedis:
    """A redis-server of our own on a free port: no persistence, so a restart loses every message, as a crash of
    a cache-configured Redis does."""

    def __init__(self, workdir: Path) -> None:
        self.dir = Path(workdir) / "redis"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.process: Process | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self, timeout: float = 15) -> None:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        argv = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", str(self.dir), "--daemonize", "no"]
        self.process = Process("redis", argv, log_path=self.dir / "redis.log").start()
        wait_until(self.ping, timeout=timeout, message=f"the private Redis on port {self.port} to answer PING")

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.alive

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
        wait_until(lambda: not port_open(self.port), timeout=10, message="the private Redis to stop listening")

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        if self.process is not None:
            self.process.stop()

    def logs(self) -> str:
        return tail(self.dir / "redis.log", 30)


# --- PostgreSQL -------------------------------------------------------------------------------------------------


def postgres_bindir() -> Path:
    """Where initdb and pg_ctl are: `pg_config --bindir`, else the newest /usr/lib/postgresql/*/bin."""
    try:
        found = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=10).stdout.strip()
        if found and (Path(found) / "initdb").exists():
            return Path(found)
    except (OSError, subprocess.SubprocessError):
        pass
    candidates = [Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin") if (Path(p) / "initdb").exists()]
    if not candidates:
        raise RuntimeError("no PostgreSQL server binaries (initdb) found; install the postgresql package")
    return max(candidates, key=lambda p: [int(x) for x in p.parent.name.split(".") if x.isdigit()] or [0])


class PrivatePostgres:
    """A PostgreSQL cluster of our own: initdb into a temporary directory, served on a free port with its socket
    in that directory. PostgreSQL refuses to run as root, so as root the cluster belongs to (and runs as) the
    `postgres` system user through `runuser`; otherwise it runs as the current user. Durability is switched off
    (fsync, synchronous_commit): these tests restart the server, they do not pull the power."""

    SUPERUSER = "postgres"

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="portal-pg-"))
        self.data = self.dir / "data"
        self.log_path = self.dir / "postgres.log"
        self.port = free_port()
        self.bindir = postgres_bindir()
        self.owner = "postgres" if os.geteuid() == 0 else None
        if self.owner:
            shutil.chown(self.dir, user=self.owner, group=self.owner)
        os.chmod(self.dir, 0o700)

    def url(self, dbname: str = "postgres") -> str:
        return f"postgres://{self.SUPERUSER}@127.0.0.1:{self.port}/{dbname}"

    def _run(self, *argv: str, timeout: float = 90, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(self.bindir / argv[0]), *argv[1:]]
        if self.owner:
            command = ["runuser", "-u", self.owner, "--", *command]
        # Output to a file, not a pipe: pg_ctl's server child must not hold our pipe open.
        with tempfile.TemporaryFile() as out:
            done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  cwd=self.dir, timeout=timeout)
            out.seek(0)
            done.stdout = out.read().decode(errors="replace")
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{self.logs()}")
        return done

    def init(self) -> None:
        self._run("initdb", "-D", str(self.data), "-U", self.SUPERUSER, "--auth=trust", "--no-sync",
                  "--encoding=UTF8", "--no-locale")

    def start(self) -> None:
        options = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=200 "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log_path), "-o", options, "-w", "-t", "60",
                  "start")
        wait_until(self.ready, timeout=30, message="the private PostgreSQL to accept connections")

    def stop(self, mode: str = "fast") -> None:
        if self.postmaster_pid():
            self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop", check=False)

    def restart(self, mode: str = "fast") -> None:
        """`pg_ctl restart`: every session is cut, the server comes back on the same port with the same options."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "restart")
        wait_until(self.ready, timeout=30, message="the private PostgreSQL to accept connections again")

    def kill(self) -> None:
        pid = self.postmaster_pid()
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def postmaster_pid(self) -> int | None:
        try:
            pid = int((self.data / "postmaster.pid").read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return pid

    def ready(self) -> bool:
        try:
            with psycopg.connect(self.url(), connect_timeout=2) as conn:
                return conn.execute("select 1").fetchone() == (1,)
        except psycopg.Error:
            return False

    def create_database(self, name: str) -> None:
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')

    def close(self) -> None:
        """Stop the server (immediately: nothing here needs a clean shutdown) and remove its files."""
        try:
            self.stop(mode="immediate")
        finally:
            self.kill()
            shutil.rmtree(self.dir, ignore_errors=True)

    def logs(self) -> str:
        return tail(self.log_path, 40)


class ExistingPostgres:
    """A PostgreSQL server someone else runs (e.g. the shared one): only a database of our own is created on it
    (dropped first if left over) and dropped by close(). Nothing here can stop or restart the server."""

    def __init__(self, server_url: str) -> None:
        self.server_url = server_url.rstrip("/")
        self.log_path = Path(os.devnull)
        self._created: list[str] = []

    def url(self, dbname: str = "postgres") -> str:
        return f"{self.server_url}/{dbname}"

    def ready(self) -> bool:
        with psycopg.connect(self.url(), connect_timeout=2) as conn:
            return conn.execute("select 1").fetchone() == (1,)

    def create_database(self, name: str) -> None:
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        self._created.append(name)

    def close(self) -> None:
        with psycopg.connect(self.url(), autocommit=True) as conn:
            for name in self._created:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self._created.clear()

    def logs(self) -> str:
        return ""


class ExistingRedis:
    """A Redis someone else runs, at one database URL; nothing here stops it."""

    def __init__(self, url: str) -> None:
        self._url = url
        self.dir = Path(os.devnull)
        self.running = True

    def url(self, db: int = 0) -> str:
        return self._url

    def logs(self) -> str:
        return ""


# --- the portal ---------------------------------------------------------------------------------------------------


@dataclass
class Response:
    status: int
    json: Any
    text: str
    elapsed: float


class Api:
    """HTTP to the portal with one user's token; a new connection per request (gunicorn's sync workers close
    them anyway). Transport errors (refused, reset, timed out) propagate as OSError / http.client exceptions."""

    def __init__(self, base_url: str, token: str | None, timeout: float = 30) -> None:
        parts = urlsplit(base_url)
        self.host, self.port, self.token, self.timeout = parts.hostname, parts.port, token, timeout

    def request(self, method: str, path: str, body: Any = None) -> Response:
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        started = time.monotonic()
        connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            connection.request(method, path, body=data, headers=headers)
            answer = connection.getresponse()
            text = answer.read().decode(errors="replace")
        finally:
            connection.close()
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = None
        return Response(answer.status, parsed, text, time.monotonic() - started)

    def get(self, path: str) -> Response:
        return self.request("GET", path)

    def post(self, path: str, body: Any = None) -> Response:
        return self.request("POST", path, body if body is not None else {})


# Who the bootstrap creates: (username, role, teams).
TEAMS = [("vision", "Computer Vision", "CC-1001")]
USERS = [("alice", "engineer", ["vision"]), ("pat", "platform", []), ("quinn", "platform", [])]
# Fast timings, so faults heal within seconds (the defaults are minutes and an hour).
FAST_TIMINGS = {
    "PORTAL_SWEEP_SECONDS": "1",
    "PORTAL_SWEEP_GRACE_SECONDS": "1",
    "CELERY_VISIBILITY_TIMEOUT": "5",
    "PORTAL_KUBE_RETRY_BASE_SECONDS": "0.2",
    "PORTAL_KUBE_TIMEOUT_SECONDS": "2",
    # Beat's pod reconciliation otherwise holds a worker process in a 45 s watch every minute: the other tests'
    # work waits for it, and a test's fake API server cannot stop while the watch is open.
    "PORTAL_RECONCILE_WATCH_SECONDS": "2",
    # No periodic discovery: the fake API servers have no nodes, and a sync in the middle of a test would empty
    # gpu-east's inventory and route the test's next requests to another cluster.
    "PORTAL_INVENTORY_SYNC_SECONDS": "0",
}


class PortalStack:
    """The portal's own processes against private services: gunicorn (2 workers), a Celery worker (prefork, 2
    processes, as in docker-compose.yml) and Celery beat, configured only through the environment."""

    def __init__(self, workdir: Path, *, redis: PrivateRedis, postgres: PrivatePostgres, kube_url: str | None,
                 dbname: str = "portal", web_workers: int = 2, worker_concurrency: int = 2,
                 env: dict[str, str] | None = None, access_log: bool = True) -> None:
        self.workdir = Path(workdir)
        self.logdir = self.workdir / "logs"
        self.logdir.mkdir(parents=True, exist_ok=True)
        self.redis, self.postgres, self.kube_url, self.dbname = redis, postgres, kube_url, dbname
        self.web_workers, self.worker_concurrency, self.access_log = web_workers, worker_concurrency, access_log
        self.database_url = postgres.url(dbname)
        self.web_port = free_port()
        self.base_url = f"http://127.0.0.1:{self.web_port}"
        self.env = self._environment(env or {})
        self.tokens: dict[str, str] = {}
        self.web: Process | None = None
        self.worker: Process | None = None
        self.beat: Process | None = None
        self._worker_generation = 0

    def _environment(self, extra: dict[str, str]) -> dict[str, str]:
        inherited = {k: v for k, v in os.environ.items()
                     if not k.startswith(("PORTAL_", "CELERY_", "DJANGO_", "PYTEST_", "DB_"))
                     and k not in {"DATABASE_URL", "REDIS_URL", "CACHE_URL", "CACHE_KEY_PREFIX", "DEBUG",
                                   "SECRET_KEY", "ALLOWED_HOSTS", "LOG_LEVEL"}}
        env = {
            **inherited,
            "DJANGO_SETTINGS_MODULE": "portal.settings",
            "PYTHONPATH": str(REPO),
            "PYTHONUNBUFFERED": "1",
            "DATABASE_URL": self.database_url,
            "REDIS_URL": self.redis.url(0),
            "DEBUG": "false",
            "SECRET_KEY": "fault-tests-" + secrets.token_hex(16),
            "SECURE_SSL_REDIRECT": "false",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "PORTAL_DATA_DIR": str(self.workdir / "data"),
            "PORTAL_API_RATE": "100000/min",
            "PORTAL_CREDENTIAL_KEYS": Fernet.generate_key().decode(),
            "PORTAL_OUTBOUND_ALLOWED_NETWORKS": "127.0.0.0/8",  # the fake API server and receivers are local
            "LOG_LEVEL": "INFO",
            **FAST_TIMINGS,
        }
        env.update(extra)
        return env

    # -- set-up -----------------------------------------------------------------------------------------------

    def manage(self, *args: str, timeout: float = 180) -> str:
        """`python manage.py ...` against the private services; its output, or RuntimeError with it."""
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=self.env, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def bootstrap(self) -> None:
        """Create the database, migrate, and set up teams, users (their tokens), the demo clusters and pools, and
        gpu-east as a Kubernetes target on the fake API server, all with the management commands."""
        self.postgres.create_database(self.dbname)
        self.manage("migrate", "--no-input", "-v0")
        for slug, name, cost_center in TEAMS:
            self.manage("create_team", slug, "--name", name, "--cost-center", cost_center)
        for username, role, teams in USERS:
            team_args = [arg for team in teams for arg in ("--team", team)]
            out = self.manage("create_portal_user", username, "--role", role, *team_args)
            self.tokens[username] = out.strip().splitlines()[-1]
        self.manage("declare_clusters", "--demo")
        if self.kube_url:
            self.use_kube(self.kube_url, force=True)

    def use_kube(self, url: str, *, force: bool = False) -> None:
        """Make gpu-east a Kubernetes target at `url` (register_cluster), unless it is already."""
        if url != self.kube_url or force:
            self.manage("register_cluster", "gpu-east", "--server", url, "--token", "fault-tests",
                        "--ca-cert-file", test_ca().ca_file, "--kubernetes-version", "1.35",
                        "--gang-scheduler", "volcano")
            self.kube_url = url

    def start(self) -> None:
        self.bootstrap()
        self.start_web()
        self.start_worker()
        self.start_beat()

    # -- processes --------------------------------------------------------------------------------------------

    def _python(self, *args: str) -> list[str]:
        return [sys.executable, *args]

    def start_web(self, timeout: float = 60) -> None:
        argv = self._python("-m", "gunicorn", "portal.wsgi:application", "--bind", f"127.0.0.1:{self.web_port}",
                            "--workers", str(self.web_workers), "--timeout", "30", "--graceful-timeout", "5",
                            "--error-logfile", "-")
        if self.access_log:
            argv += ["--access-logfile", "-"]
        self.web = Process("web", argv, log_path=self.logdir / "web.log", env=self.env, cwd=REPO).start()
        wait_until(lambda: self._healthz(), timeout=timeout, interval=0.2, message="gunicorn to answer /healthz")

    def _healthz(self) -> bool:
        if not self.web.alive:
            raise RuntimeError(f"gunicorn exited:\n{tail(self.web.log_path)}")
        return Api(self.base_url, None, timeout=2).get("/healthz").status == 200

    def start_worker(self, timeout: float = 60, *, pool: str = "prefork", env: dict[str, str] | None = None) -> Process:
        """A worker (prefork with the stack's concurrency, or `pool="solo"`: one task at a time, in the consumer
        itself), with `env` on top of the stack's environment."""
        self._worker_generation += 1
        name = f"faults{self._worker_generation}@%h"
        pool_args = ["--pool", pool] + (["--concurrency", str(self.worker_concurrency)] if pool != "solo" else [])
        argv = self._python("-m", "celery", "-A", "portal", "worker", "-l", "INFO", *pool_args, "-n", name,
                            "--without-gossip", "--without-mingle", "--without-heartbeat")
        log = self.logdir / f"worker-{self._worker_generation}.log"
        self.worker = Process("worker", argv, log_path=log, env={**self.env, **(env or {})}, cwd=REPO).start()
        worker = self.worker
        wait_until(lambda: self._started(worker, " ready."), timeout=timeout, interval=0.2,
                   message="the Celery worker to be ready")
        return worker

    def kill_worker(self) -> None:
        """SIGKILL the worker's whole process group (main process and pool children): no warm shutdown, no
        acknowledgement, no requeue by the worker itself."""
        self.worker.kill()

    def start_beat(self, timeout: float = 60) -> None:
        argv = self._python("-m", "celery", "-A", "portal", "beat", "-l", "INFO",
                            "-s", str(self.workdir / "celerybeat-schedule"), "--pidfile", str(self.workdir / "beat.pid"))
        self.beat = Process("beat", argv, log_path=self.logdir / "beat.log", env=self.env, cwd=REPO).start()
        beat = self.beat
        wait_until(lambda: self._started(beat, "beat: Starting"), timeout=timeout, interval=0.2,
                   message="Celery beat to start")

    @staticmethod
    def _started(process: Process, marker: str) -> bool:
        if not process.alive:
            raise RuntimeError(f"{process.name} exited:\n{tail(process.log_path)}")
        return marker in process.log_text()

    def processes(self) -> list[Process]:
        return [p for p in (self.web, self.worker, self.beat) if p is not None]

    def ensure_running(self) -> None:
        """Bring back whatever a previous test left stopped or killed."""
        if not self.redis.running:
            self.redis.start()
        if not self.postgres.ready():
            if not self.postgres.postmaster_pid():
                self.postgres.start()
            wait_until(self.postgres.ready, timeout=30, message="PostgreSQL to accept connections")
        if self.web is None or not self.web.alive:
            self.start_web()
        if self.worker is None or not self.worker.alive:
            self.start_worker()
        if self.beat is None or not self.beat.alive:
            self.start_beat()

    def close(self) -> None:
        for process in (self.beat, self.worker, self.web):
            if process is not None:
                process.stop()

    # -- talking to it ----------------------------------------------------------------------------------------

    def api(self, username: str | None, timeout: float = 30) -> Api:
        return Api(self.base_url, self.tokens[username] if username else None, timeout=timeout)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Read the private database on a fresh connection (survives server restarts between calls)."""
        with psycopg.connect(self.database_url, autocommit=True, connect_timeout=5) as conn:
            return conn.execute(sql, params).fetchall()

    def keep_logs(self, target: Path) -> Path:
        """Copy every log there still is (processes, PostgreSQL, Redis) to `target`, e.g. for CI artifacts. After the
        session's stack is closed (a failure in the last test's teardown) its folder is gone: what cannot be
        copied is listed in `target`/MISSING.txt instead of failing the report of the test that failed."""
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True, exist_ok=True)
        missing = []
        for path in [*sorted(self.logdir.glob("*.log")), self.postgres.log_path, self.redis.dir / "redis.log"]:
            if path == Path(os.devnull):
                continue  # a server someone else runs: no log of ours
            try:
                shutil.copy(path, target / path.name)
            except OSError as exc:
                missing.append(f"{path}: {exc.strerror or exc}")
        if not self.logdir.is_dir():
            missing.insert(0, f"{self.logdir}: gone (the stack was closed before the report)")
        if missing:
            (target / "MISSING.txt").write_text("\n".join(missing) + "\n")
        return target

    def logs(self) -> str:
        """The tail of every log, for a failing test's report."""
        parts = []
        for path in sorted(self.logdir.glob("*.log")):
            parts.append(f"----- {path.name} -----\n{tail(path, 120)}")
        parts.append(f"----- postgres -----\n{self.postgres.logs()}")
        parts.append(f"----- redis -----\n{self.redis.logs()}")
        return "\n".join(parts)
