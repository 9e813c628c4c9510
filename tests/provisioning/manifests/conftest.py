"""The render matrix's closing note: objects validated (schema and semantic), not test items."""

from __future__ import annotations

import sys


def pytest_terminal_summary(terminalreporter):
    matrix = sys.modules.get("tests.provisioning.manifests.test_matrix")
    counted = getattr(matrix, "COUNTED", None)
    if not counted or not counted["rendered"] + counted["refused"]:
        return
    terminalreporter.write_line(
        f"render matrix: {counted['rendered']} cases rendered, {counted['refused']} refused, "
        f"{counted['validated']} objects schema-validated, {counted['semantic']} checked against their cluster, "
        f"{counted.get('queued', 0)} GPU workloads through a Kueue LocalQueue, "
        f"{counted.get('policies', 0)} team ValidatingAdmissionPolicies (each with its binding), "
        f"{counted.get('priority_fields', 0)} priority fields checked"
    )
