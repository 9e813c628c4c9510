"""Fixtures for the fault tests: one private Redis, one private PostgreSQL cluster, a fake Kubernetes API server and
the portal's processes for the session (starting them takes a while); each test gets them running again, whatever
the previous test stopped or killed, and a failing test's report carries the tail of every log."""
from __future__ import annotations

import linecache
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesim.server import FakeKubeAPI

from .harness import REPO, PortalStack, PrivatePostgres, PrivateRedis

# A failing test's whole logs are copied here (git-ignored by default).
ARTIFACTS = Path(os.environ.get("FAULT_ARTIFACTS_DIR", REPO / "test-artifacts" / "faults"))


@pytest.fixture
def fault_kube(start_fake_kube) -> FakeKubeAPI:
    """A fresh fake API server per test: kmock's request matching slows down with every request it has seen."""
    return start_fake_kube()


@pytest.fixture(scope="session")
def fault_stack() -> Iterator[PortalStack]:
    workdir = Path(tempfile.mkdtemp(prefix="portal-faults-"))
    redis = PrivateRedis(workdir)
    postgres = PrivatePostgres()
    stack = None
    try:
        redis.start()
        postgres.init()
        postgres.start()
        stack = PortalStack(workdir, redis=redis, postgres=postgres, kube_url=None)
        stack.start()
        yield stack
    finally:
        try:
            if stack is not None:
                stack.close()
        finally:
            redis.close()
            postgres.close()
            shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def stack(fault_stack: PortalStack, fault_kube: FakeKubeAPI) -> PortalStack:
    """The running stack, with anything a previous test left stopped brought back, provisioning gpu-east into
    this test's fake API server."""
    fault_stack.ensure_running()
    fault_stack.use_kube(fault_kube.url)
    return fault_stack


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    try:
        report = yield
    except Exception as exc:  # noqa: BLE001
        # pytest itself could not describe the failure (seen: CPython 3.11's "SystemError: AST constructor
        # recursion depth mismatch" while it parsed the failing source): report it in plain text instead.
        report = plain_report(item, call, exc)
    if report.failed:
        portal = item.funcargs.get("stack") if hasattr(item, "funcargs") else None
        if portal is not None:
            # Nothing here may raise: an error in a report hook is an INTERNALERROR that hides the test's failure.
            try:
                kept = portal.keep_logs(ARTIFACTS / re.sub(r"[^\w.-]+", "_", item.nodeid))
                report.sections.append((f"portal processes (log tails; whole logs in {kept})", portal.logs()))
            except Exception as exc:  # noqa: BLE001
                report.sections.append(("portal processes", f"the logs could not be kept: {exc!r}"))
    return report


def plain_report(item, call, error: Exception) -> pytest.TestReport:
    """The failure of `call` as a report built without pytest's source rendering: the exception, and the file,
    line and function of each frame."""
    lines = [f"(pytest could not render this failure: {error!r})"]
    excinfo = call.excinfo
    if excinfo is not None:
        tb = excinfo.tb
        while tb is not None:
            code = tb.tb_frame.f_code
            source = linecache.getline(code.co_filename, tb.tb_lineno).strip()
            lines.append(f"{code.co_filename}:{tb.tb_lineno} in {code.co_name}: {source}")
            tb = tb.tb_next
        lines.append(f"{excinfo.typename}: {excinfo.value}")
    return pytest.TestReport(item.nodeid, item.location, {}, "failed" if excinfo else "passed",
                             "\n".join(lines) if excinfo else None, call.when, [], call.duration,
                             start=call.start, stop=call.stop, user_properties=list(item.user_properties))
