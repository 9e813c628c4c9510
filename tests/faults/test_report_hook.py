"""The fault step's report hook (tests/faults/conftest.py) adds the portal's logs to a failing test's report. When
the stack's log folder was already gone (the session's stack is closed in the last test's teardown) it crashed
with INTERNALERROR, and the test's own failure was never shown. Run here in a pytest of its own (pytester, in a
subprocess, with a stack that is never started), as part of the default suite: it needs no services."""
from __future__ import annotations

import pytest

from .harness import REPO

pytest_plugins = ["pytester"]

INNER_CONFTEST = '''
import shutil

import pytest

from tests.faults.conftest import pytest_runtest_makereport  # noqa: F401 - the hook under test
from tests.faults.harness import ExistingPostgres, ExistingRedis, PortalStack


@pytest.fixture
def stack(tmp_path):
    portal = PortalStack(tmp_path / "stack", redis=ExistingRedis("redis://127.0.0.1:9/0"),
                         postgres=ExistingPostgres("postgres://nobody@127.0.0.1:9"), kube_url=None)
    (portal.logdir / "worker-1.log").write_text("worker: the line that explains it\\n")
    return portal


@pytest.fixture
def closed_at_teardown(stack):
    yield stack
    shutil.rmtree(stack.workdir)  # what the session fixture does after the last test
    raise RuntimeError("teardown failed after the stack was closed")
'''

INNER_TESTS = '''
import shutil


def test_fails_with_its_logs(stack):
    assert 1 + 1 == 3, "the first real failure"


def test_fails_after_its_stack_is_gone(stack):
    shutil.rmtree(stack.workdir)
    assert False, "the second real failure"


def test_teardown_fails_after_the_stack_is_gone(closed_at_teardown):
    pass


def test_fails_where_pytest_cannot_render_it(stack):
    assert 2 + 2 == 5, "the third real failure"
'''

# Makes pytest's own report of one test fail as CPython 3.11 once did while it parsed the failing source.
BROKEN_RENDERING = '''
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item, call):
    if call.excinfo is not None and item.name == "test_fails_where_pytest_cannot_render_it":
        raise SystemError("AST constructor recursion depth mismatch (before=117, after=137)")
'''


@pytest.fixture
def inner(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", f"{REPO}:{pytester.path}")
    monkeypatch.setenv("FAULT_ARTIFACTS_DIR", str(tmp_path / "artifacts"))
    pytester.makeconftest(INNER_CONFTEST)
    pytester.makepyfile(test_inner=INNER_TESTS, broken_rendering=BROKEN_RENDERING)
    return pytester


def test_a_failing_fault_test_reports_its_own_failure_with_or_without_its_logs(inner, tmp_path):
    result = inner.runpytest_subprocess("-p", "no:django", "-p", "no:cacheprovider", "-p", "broken_rendering",
                                        "-o", "addopts=", timeout=120)

    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output, output
    result.assert_outcomes(passed=1, failed=3, errors=1)
    assert "the first real failure" in output and "the second real failure" in output
    assert "pytest could not render this failure: SystemError('AST constructor recursion depth" in output
    assert "the third real failure" in output and "in test_fails_where_pytest_cannot_render_it" in output
    assert "teardown failed after the stack was closed" in output
    assert "worker: the line that explains it" in output  # the log tail, while there is a log
    kept = tmp_path / "artifacts"
    assert (kept / "test_inner.py_test_fails_with_its_logs" / "worker-1.log").read_text().startswith("worker:")
    missing = (kept / "test_inner.py_test_fails_after_its_stack_is_gone" / "MISSING.txt").read_text()
    assert "gone (the stack was closed before the report)" in missing
