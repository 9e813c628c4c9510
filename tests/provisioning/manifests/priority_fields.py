"""The priority fields of one render-matrix case, checked field by field against what each backend reads
(provisioning/manifests/priority.py cites the sources), and counted: `expected_priority_fields(case)` counts them from
the rules, `check_priority_fields(case, objects)` asserts each one's value and returns how many it asserted."""

from __future__ import annotations

VOLCANO_PREEMPTABLE = "volcano.sh/preemptable"
VOLCANO_COOLDOWN = "volcano.sh/cooldown-time"
KAI_PREEMPTIBILITY = "kai.scheduler/preemptibility"
KUEUE_PRIORITY_CLASS = "kueue.x-k8s.io/priority-class"


def class_name(priority) -> str:
    return f"gpu-portal-{priority.tier}" + ("" if priority.preempts else "-never-preempts")


def expected_priority_fields(case) -> int:
    """Pods: priorityClassName + terminationGracePeriodSeconds. Volcano: pod preemptable (+ cooldown for training),
    a gang's PodGroup priorityClassName + preemptable. KAI: pod and owner preemptibility labels, a gang's PodGroup
    priorityClassName + preemptibility. Kueue gang: the Job's priority-class label. Native gang: 1.36 the template's
    and PodGroup's priorityClassName, 1.37 those and both preemptionPolicy."""
    backend, version, request = case.cluster.gang_scheduler, case.cluster.kubernetes_version, case.request
    count = 2
    if backend == "volcano":
        count += 1 + (1 if request.workload_class == "training" else 0) + (2 if request.gang else 0)
    elif backend == "kai":
        count += 2 + (2 if request.gang else 0)
    elif backend == "kueue" and request.gang:
        count += 1
    elif backend == "native" and request.gang:
        count += {"1.35": 0, "1.36": 2, "1.37": 4}[version]
    return count


def check_priority_fields(case, objects) -> int:
    priority, backend = case.request.priority, case.cluster.gang_scheduler
    name = class_name(priority)
    checked = 0

    def same(actual, expected, what):
        nonlocal checked
        assert actual == expected, (case.id, what, actual, expected)
        checked += 1

    [priority_class] = [o for o in objects if o["kind"] == "PriorityClass"]
    assert (priority_class["metadata"]["name"], priority_class["value"]) == (name, priority.value)
    assert priority_class["preemptionPolicy"] == ("PreemptLowerPriority" if priority.preempts else "Never")
    workload = objects[-1]
    owner_labels = workload["metadata"]["labels"]
    template = (workload["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
                if workload["kind"] == "JobSet" else workload["spec"]["template"])
    pod, meta = template["spec"], template["metadata"]
    same(pod["priorityClassName"], name, "pod priorityClassName")
    same(pod["terminationGracePeriodSeconds"], priority.grace_seconds, "pod grace")
    groups = [o for o in objects if o["kind"] == "PodGroup"]
    if backend == "volcano":
        same(meta["annotations"][VOLCANO_PREEMPTABLE], str(priority.preemptible).lower(), "volcano preemptable")
        if case.request.workload_class == "training":
            same(meta["annotations"][VOLCANO_COOLDOWN], f"{priority.min_runtime_minutes * 60}s", "volcano cooldown")
        for group in groups:
            same(group["spec"]["priorityClassName"], name, "volcano PodGroup priorityClassName")
            same(group["metadata"]["annotations"][VOLCANO_PREEMPTABLE], str(priority.preemptible).lower(),
                 "volcano PodGroup preemptable")
    elif backend == "kai":
        wanted = "preemptible" if priority.preemptible else "non-preemptible"
        same(meta["labels"][KAI_PREEMPTIBILITY], wanted, "kai pod preemptibility")
        same(owner_labels[KAI_PREEMPTIBILITY], wanted, "kai owner preemptibility")
        for group in groups:
            same(group["spec"]["priorityClassName"], name, "kai PodGroup priorityClassName")
            same(group["spec"]["preemptibility"], wanted, "kai PodGroup preemptibility")
    elif backend == "kueue" and case.request.gang:
        same(owner_labels[KUEUE_PRIORITY_CLASS], name, "kueue priority-class label")
        [wpc] = [o for o in objects if o["kind"] == "WorkloadPriorityClass"]
        assert (wpc["metadata"]["name"], wpc["value"]) == (name, priority.value)
    elif backend == "native" and case.request.gang:
        native = [o for o in objects if o["kind"] in ("Workload", "PodGroup")]
        for obj in native:
            if case.cluster.kubernetes_version == "1.35":  # v1alpha1 Workload: no priority field
                assert "priorityClassName" not in str(obj)
                continue
            spec = obj["spec"]["podGroupTemplates"][0] if obj["kind"] == "Workload" else obj["spec"]
            same(spec["priorityClassName"], name, f"native {obj['kind']} priorityClassName")
            if case.cluster.kubernetes_version == "1.37":
                same(spec["preemptionPolicy"], "PreemptLowerPriority", f"native {obj['kind']} preemptionPolicy")
    if backend not in ("volcano", "kai"):
        assert VOLCANO_PREEMPTABLE not in meta["annotations"] and KAI_PREEMPTIBILITY not in meta["labels"]
    return checked
