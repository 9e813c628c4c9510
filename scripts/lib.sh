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

demo_address() {
  # Loopback by default: the demo has well-known passwords. HOST=0.0.0.0 (or ::) serves every interface, on purpose.
  local bare="${HOST:-127.0.0.1}"
  bare="${bare#[}"; bare="${bare%]}"
  case "$bare" in
    0.0.0.0) BIND="$bare"; URL_HOST=127.0.0.1 ;;  # a wildcard address is not something a browser can open
    ::) BIND="[::]"; URL_HOST="[::1]" ;;
    *:*) BIND="[$bare]"; URL_HOST="[$bare]" ;;  # IPv6 is bracketed in URLs and for runserver
    *) BIND="$bare"; URL_HOST="$bare" ;;
  esac
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
  # The scripts never change a role's password: a server that wants one over TCP gets it from DATABASE_URL.
  if ! psql "$DATABASE_URL" -qAtc 'select 1' >/dev/null 2>&1 && ! psql "${DATABASE_URL%/*}/postgres" -qAtc 'select 1' >/dev/null 2>&1; then
    cat >&2 <<MSG
PostgreSQL refused a login with DATABASE_URL=${DATABASE_URL}.
If the server asks for a password over TCP, put it in the URL, e.g.
  DATABASE_URL=postgres://postgres:YOUR-PASSWORD@127.0.0.1:5432/gpu_portal $0
or connect through the local Unix socket (peer authentication, as the operating-system user of that name), e.g.
  DATABASE_URL=postgres:///gpu_portal?host=/var/run/postgresql $0
MSG
    exit 1
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
