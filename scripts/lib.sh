# Shared set-up steps for scripts/demo, scripts/test and .ci/run. Source it; every step is idempotent.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/gpu_portal}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
  log "installing $* with apt-get"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

pick_python() {
  for candidate in python3.11 python3.12 python3.13 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      echo "$candidate"; return
    fi
  done
  apt_install python3 python3-venv python3-dev
  echo python3
}

ensure_venv() {  # $1: pip extras, e.g. "[test]"
  local extras="${1:-}"
  local stamp="$VENV/.installed$extras"
  if [ ! -x "$PY" ]; then
    log "creating virtual environment in $VENV"
    "$(pick_python)" -m venv "$VENV"
  fi
  # Reinstall only when pyproject.toml changed since the last install.
  if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
    log "installing Python dependencies$extras"
    "$PY" -m pip install -q --upgrade pip >/dev/null
    "$PY" -m pip install -q -e "$ROOT$extras"
    touch "$stamp"
  fi
}

postgres_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

ensure_services() {
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then apt_install postgresql postgresql-client; fi
  if ! command -v redis-server >/dev/null 2>&1; then apt_install redis-server redis-tools; fi
  if ! postgres_up; then
    log "starting PostgreSQL"
    as_root pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start
    for _ in $(seq 30); do postgres_up && break; sleep 1; done
  fi
  if ! redis_up; then
    log "starting Redis"
    as_root redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
    for _ in $(seq 30); do redis_up && break; sleep 0.5; done
  fi
  postgres_up || { echo "PostgreSQL did not start" >&2; exit 1; }
  redis_up || { echo "Redis did not start" >&2; exit 1; }
  # Some machines ask for a password over TCP: give the postgres role one and use it.
  if ! psql "$DATABASE_URL" -qAtc 'select 1' >/dev/null 2>&1 && ! psql "${DATABASE_URL%/*}/postgres" -qAtc 'select 1' >/dev/null 2>&1; then
    log "PostgreSQL refused a password-less TCP login: setting one for the postgres role"
    as_root su postgres -c "psql -qc \"ALTER USER postgres PASSWORD 'postgres'\"" >/dev/null
    export DATABASE_URL="${DATABASE_URL/postgres@/postgres:postgres@}"
  fi
}

ensure_database() {
  local name="${DATABASE_URL##*/}"
  local server="${DATABASE_URL%/*}"
  name="${name%%\?*}"
  if ! psql "$server/postgres" -qAtc "select 1 from pg_database where datname = '$name'" | grep -q 1; then
    log "creating database $name"
    psql "$server/postgres" -qc "CREATE DATABASE \"$name\"" >/dev/null
  fi
}
