"""The rendered objects through the API: preview (nothing stored) and a request's manifests as JSON or YAML."""
import pytest
import yaml

from workflows.services import request_submit
from provisioning.manifests.validation import validate_objects
from tests.conftest import VALID_ANSWERS

pytestmark = pytest.mark.django_db


def test_preview_returns_valid_manifests_for_the_decision(api, engineer, team_a, inventory):
    from provisioning.inventory import team_quota_set

    team_quota_set(team=team_a, strategy="mig", gpu_equivalents=2)
    body = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "name": "chat", "answers": VALID_ANSWERS},
                              format="json").json()
    kinds = [m["kind"] for m in body["manifests"]]
    assert kinds[:2] == ["Namespace", "ResourceQuota"] and "Deployment" in kinds
    deployment = next(m for m in body["manifests"] if m["kind"] == "Deployment")
    limits = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/mig-1g.18gb"] in (1, "1")
    assert validate_objects(body["manifests"], "1.35") == len(body["manifests"])
    quota = next(m for m in body["manifests"] if m["kind"] == "ResourceQuota")
    # 2 GPU equivalents of MIG on the east cluster's pools: 14 1g slices of an H200 or an A100, 7 2g, 4 3g...
    assert quota["spec"]["hard"]["requests.nvidia.com/mig-1g.18gb"] == "14"
    assert quota["spec"]["hard"]["requests.nvidia.com/mig-3g.71gb"] == "4"


def test_request_manifests_as_json_and_yaml(api, engineer, engineer_b, team_a, inventory):
    gpu_request = request_submit(user=engineer, team=team_a, name="chat", raw_answers=VALID_ANSWERS)
    as_json = api(engineer).get(f"/api/v1/requests/{gpu_request.pk}/manifests/")
    assert as_json.status_code == 200
    objects = as_json.json()
    labels = objects[-1]["metadata"]["labels"]
    assert labels["gpu-portal.io/request-id"] == str(gpu_request.pk) and labels["gpu-portal.io/team"] == "team-a"
    as_yaml = api(engineer).get(f"/api/v1/requests/{gpu_request.pk}/manifests/?format=yaml")
    assert as_yaml.status_code == 200 and as_yaml["Content-Type"].startswith("application/yaml")
    assert list(yaml.safe_load_all(as_yaml.content)) == objects
    assert api(engineer_b).get(f"/api/v1/requests/{gpu_request.pk}/manifests/").status_code == 404


def test_training_on_the_dra_cluster_renders_claims_and_a_native_gang(api, engineer, team_a, inventory):
    answers = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 150,
               "gpus_per_replica": 1, "replicas": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
    gpu_request = request_submit(user=engineer, team=team_a, name="big", raw_answers=answers)
    assert gpu_request.decision.cluster == "gpu-west"  # only the B200s hold 150 GB
    objects = api(engineer).get(f"/api/v1/requests/{gpu_request.pk}/manifests/").json()
    kinds = {(m["apiVersion"], m["kind"]) for m in objects}
    assert ("resource.k8s.io/v1", "ResourceClaimTemplate") in kinds
    assert ("scheduling.k8s.io/v1alpha2", "Workload") in kinds and ("scheduling.k8s.io/v1alpha2", "PodGroup") in kinds
    assert validate_objects(objects, "1.36") == len(objects)


def test_the_team_admission_policy_admits_every_request_the_team_runs_there(api, engineer, platform_user, team_a,
                                                                           inventory):
    """Issue 23 item 8, through the API: on a cluster without Kueue whose API server serves admission policies (as
    discovery recorded it), a request's manifests carry the team's ValidatingAdmissionPolicy, whose approvals list
    this request and the team's other approved one on the same cluster; none where the API is not served."""
    from workflows.services import request_approve
    from provisioning.inventory import team_quota_set
    from provisioning.models import Cluster

    team_quota_set(team=team_a, strategy="mig", gpu_equivalents=4)
    first = request_submit(user=engineer, team=team_a, name="chat", raw_answers=VALID_ANSWERS)
    if first.status == "pending_approval":
        request_approve(user=platform_user, request_id=first.pk)
    pending = request_submit(user=engineer, team=team_a, name="chat-two", raw_answers=VALID_ANSWERS)
    Cluster.objects.filter(name=first.decision.cluster).update(serves_admission_policies=True)

    objects = api(engineer).get(f"/api/v1/requests/{pending.pk}/manifests/").json()

    policy = next(o for o in objects if o["kind"] == "ValidatingAdmissionPolicy")
    owners = next(v["expression"] for v in policy["spec"]["variables"] if v["name"] == "owners")
    assert f"'{first.pk}': 'ReplicaSet/chat-r{first.pk}-'" in owners and f"'{pending.pk}': " in owners
    binding = next(o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding")
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert validate_objects(objects, "1.35") == len(objects)

    Cluster.objects.filter(name=first.decision.cluster).update(serves_admission_policies=False)
    objects = api(engineer).get(f"/api/v1/requests/{pending.pk}/manifests/").json()
    assert "ValidatingAdmissionPolicy" not in {o["kind"] for o in objects}
