"""What the decision type costs a read and a write: `Decision.from_json()` and `to_json()` of a decided gang
training request, against `json.loads()` of the same stored text (what reading the JSON column costs anyway),
measured in the same run. Pure: no database. Run: `.venv/bin/python bench/decision_json.py`."""
from __future__ import annotations

import json
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from intake.decisions import Answers, Decision, decide  # noqa: E402
from tests.intake.test_policy_matrix import default_policy, demo_inventory  # noqa: E402

TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "data_sensitivity": "standard",
            "gpu_memory_gb": 80, "gpus_per_replica": 8, "replicas": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}


def main(runs: int = 20000) -> None:
    decision = decide(Answers.from_dict(TRAINING), default_policy(), demo_inventory())
    stored = json.dumps(decision.to_json())
    data = json.loads(stored)
    assert Decision.from_json(data) == decision
    best = {}
    for _ in range(3):  # best of three: the machine is shared
        for name, call in (("json.loads (baseline)", lambda: json.loads(stored)),
                           ("Decision.from_json", lambda: Decision.from_json(data)),
                           ("Decision.to_json", decision.to_json)):
            took = timeit.timeit(call, number=runs) / runs * 1e6
            best[name] = min(took, best.get(name, took))
    for name, took in best.items():
        print(f"{name:24} {took:6.1f} us  ({took / best['json.loads (baseline)']:.2f} x the baseline)")


if __name__ == "__main__":
    main()
