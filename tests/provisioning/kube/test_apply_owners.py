"""Gang objects are owned by their Job, over HTTP against the fake API server with the real renderer's output.

Given a rendered gang-scheduled training request, when the Kubernetes applier applies it, then the PodGroup (and
the native Workload) carry an ownerReference with the Job's uid, applying again changes nothing, and deleting the
Job alone lets the garbage collector remove them.
"""
from __future__ import annotations

import pytest

from provisioning.kube.apply import KubernetesApplier
from provisioning.manifests import render_all
from tests.provisioning.manifests.matrix import cases

CASES = {case.id: case for case in cases()}


def _applied(kube_connection, case_id):
    case = CASES[case_id]
    objects = render_all(case.team, case.request, case.cluster)
    applier = KubernetesApplier(kube_connection, label_domain=case.cluster.label_domain)
    try:
        refs = applier.apply(objects)
        again = applier.apply(objects)
    finally:
        applier.close()
    return objects, refs, again


def _job(objects):
    return next(o for o in objects if o["kind"] == "Job")


@pytest.mark.parametrize("fake_kube_version, case_id, owned", [
    ("v1.35.2", "whole_gpu-device_plugin-volcano-1.35-training_gang-plain", [("scheduling.volcano.sh/v1beta1", "PodGroup")]),
    ("v1.35.2", "whole_gpu-device_plugin-kai-1.35-training_gang-plain", [("scheduling.run.ai/v2alpha2", "PodGroup")]),
    ("v1.36.1", "whole_gpu-device_plugin-native-1.36-training_gang-plain",
     [("scheduling.k8s.io/v1alpha2", "Workload"), ("scheduling.k8s.io/v1alpha2", "PodGroup")]),
])  # fmt: skip
def test_gang_objects_are_owned_by_the_job_and_go_with_it(fake_kube, kube_connection, kube_client, case_id, owned):
    objects, refs, again = _applied(kube_connection, case_id)
    job = _job(objects)
    namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
    job_uid = next(r.uid for r in refs if r.kind == "Job")

    for api_version, kind in owned:
        (live,) = [o for o in fake_kube.find(api_version, kind, namespace, "") if o["kind"] == kind]
        assert live["metadata"]["ownerReferences"] == [
            {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": job_uid}
        ]
    # The second apply reads the Job's uid first and sends every object unchanged.
    assert [r.resource_version for r in again] == [r.resource_version for r in refs]

    jobs = kube_client.resource("batch/v1", "Job")
    kube_client.dynamic.delete(jobs, name=name, namespace=namespace,
                               body={"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"})
    for api_version, kind in owned:
        assert [o for o in fake_kube.find(api_version, kind, namespace, "") if o["kind"] == kind] == []
    # Objects the Job does not own stay (the applier's teardown deletes them by label).
    assert fake_kube.find("v1", "Service", namespace, "") != []
