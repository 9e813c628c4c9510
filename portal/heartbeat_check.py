"""The probe of the worker's and beat's heartbeat files (portal/heartbeat.py writes them).

`python -m portal.heartbeat_check PATH --max-age SECONDS` exits 0 when PATH was touched within SECONDS, 1 with
the reason on stderr otherwise. No Django set-up: a probe runs every few seconds beside the worker.
"""
from __future__ import annotations

import argparse
import os
import sys
import time


def age_seconds(path: str | os.PathLike[str], *, now: float | None = None) -> float | None:
    """Seconds since the file was last touched; None when it does not exist."""
    try:
        mtime = os.stat(path).st_mtime
    except FileNotFoundError:
        return None
    return (time.time() if now is None else now) - mtime


def check(path: str | os.PathLike[str], max_age: float) -> tuple[bool, str]:
    age = age_seconds(path)
    if age is None:
        return False, f"no heartbeat yet: {path} does not exist"
    if age > max_age:
        return False, f"heartbeat {path} is {age:.0f} s old (more than {max_age:.0f} s)"
    return True, f"heartbeat {path} is {age:.0f} s old"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Exit 0 if a heartbeat file is recent enough, 1 otherwise.")
    parser.add_argument("path")
    parser.add_argument("--max-age", type=float, required=True, help="seconds")
    args = parser.parse_args(argv)
    ok, message = check(args.path, args.max_age)
    print(message, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
