"""Given a team namespace, when the renderer renders its objects, then NetworkPolicies deny ingress from other
namespaces but for the peers the cluster declares (ingress controller to inference pods, metrics scraper)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from provisioning.manifests import RenderError, render, render_team, validate_objects
from provisioning.manifests.spec import NetworkPeer

from .matrix import INGRESS_CONTROLLER, METRICS_SCRAPER, VERSIONS, cases, make_team

CASES = {case.id: case for case in cases()}
INFERENCE = "whole_gpu-device_plugin-none-1.36-inference-plain"


def _policies(cluster):
    return {o["metadata"]["name"]: o for o in render_team(make_team(), cluster) if o["kind"] == "NetworkPolicy"}


def _declaring(case_id=INFERENCE, **peers):
    return replace(CASES[case_id].cluster, **peers)


def test_without_declared_peers_only_the_teams_own_pods_may_connect():
    (policy,) = _policies(CASES[INFERENCE].cluster).values()
    assert policy["metadata"]["name"] == "default-deny-ingress"
    assert policy["metadata"]["namespace"] == "gpu-ml-research"
    assert policy["spec"] == {
        "podSelector": {},
        "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"podSelector": {}}]}],
    }


def test_the_metrics_scraper_is_admitted_by_namespace_and_pod_labels():
    policy = _policies(_declaring(metrics_scraper=METRICS_SCRAPER))["default-deny-ingress"]
    assert policy["spec"]["ingress"] == [
        {
            "from": [
                {"podSelector": {}},
                {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                    "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
                },
            ]
        }
    ]


def test_a_scraper_declared_without_pod_labels_is_every_pod_of_its_namespace():
    policy = _policies(_declaring(metrics_scraper=NetworkPeer("monitoring")))["default-deny-ingress"]
    assert policy["spec"]["ingress"][0]["from"][1]["podSelector"] == {"matchLabels": {}}


def test_the_ingress_controller_reaches_only_the_http_port_of_inference_pods():
    policies = _policies(_declaring(ingress_controller=INGRESS_CONTROLLER))
    assert set(policies) == {"default-deny-ingress", "allow-ingress-controller"}
    spec = policies["allow-ingress-controller"]["spec"]
    assert spec["podSelector"] == {"matchLabels": {"gpu-portal.example.com/workload-class": "inference"}}
    assert spec["ingress"] == [
        {
            "from": [
                {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}},
                    "podSelector": {
                        "matchLabels": {
                            "app.kubernetes.io/component": "controller",
                            "app.kubernetes.io/name": "ingress-nginx",
                        }
                    },
                }
            ],
            "ports": [{"protocol": "TCP", "port": 8000}],
        }
    ]
    # The controller is not admitted by the default-deny policy, so training and notebook pods stay closed to it.
    assert policies["default-deny-ingress"]["spec"]["ingress"] == [{"from": [{"podSelector": {}}]}]


@pytest.mark.parametrize(
    "case_id, selected",
    [
        (INFERENCE, True),
        ("whole_gpu-device_plugin-volcano-1.36-training_gang-plain", False),
        ("whole_gpu-device_plugin-none-1.36-development-plain", False),
    ],
)
def test_the_ingress_policy_selects_inference_pods_and_their_serving_port(case_id, selected):
    cluster = _declaring(case_id, ingress_controller=INGRESS_CONTROLLER)
    selector = _policies(cluster)["allow-ingress-controller"]["spec"]["podSelector"]["matchLabels"]
    (workload,) = [o for o in render(CASES[case_id].request, cluster) if o["kind"] in ("Job", "Deployment")]
    pod = workload["spec"]["template"]
    assert (selector.items() <= pod["metadata"]["labels"].items()) is selected
    if selected:
        ports = [p["containerPort"] for p in pod["spec"]["containers"][0]["ports"]]
        assert ports == [8000]


@pytest.mark.parametrize("version", VERSIONS)
def test_policies_are_valid_networking_v1_on_every_supported_version(version):
    cluster = _declaring(
        kubernetes_version=version, ingress_controller=INGRESS_CONTROLLER, metrics_scraper=METRICS_SCRAPER
    )
    objects = render_team(make_team(), cluster)
    assert [o["kind"] for o in objects].count("NetworkPolicy") == 2
    assert validate_objects(objects, version) == len(objects)


@pytest.mark.parametrize(
    "peer, message",
    [
        (NetworkPeer("Ingress_Nginx"), "is not a namespace name"),
        (NetworkPeer(""), "needs a namespace"),
        (NetworkPeer("monitoring", {"app": "prom etheus"}), "is not a label value"),
        (NetworkPeer("monitoring", {"-bad-": "x"}), "is not a label key"),
    ],
)
def test_an_unusable_peer_is_refused_with_what_to_change(peer, message):
    with pytest.raises(RenderError, match=f"metrics scraper is not usable.*{message}"):
        render_team(make_team(), _declaring(metrics_scraper=peer))
