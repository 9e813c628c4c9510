"""Team namespaces are isolated on the network, end to end.

Given a cluster whose ingress controller and metrics scraper the platform team declares in the admin, when a
request of a team is approved, then its namespace gets the NetworkPolicies (applied over HTTP to the fake API
server, recorded as team objects) with exactly those peers, and they outlive the request. Bad declarations are
refused on their field in the admin form, never as a server error; finance cannot change them.
"""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from workflows.services import request_approve, request_cancel, request_submit
from provisioning.models import AppliedObject, Cluster
from tests.conftest import VALID_ANSWERS

pytestmark = pytest.mark.django_db

NETWORK = {
    "ingress_namespace": "ingress-nginx",
    "ingress_pod_labels": '{"app.kubernetes.io/name": "ingress-nginx"}',
    "metrics_namespace": "monitoring",
    "metrics_pod_labels": '{"app.kubernetes.io/name": "prometheus"}',
}


@pytest.fixture
def east(inventory, fake_kube):
    call_command("register_cluster", "gpu-east", "--server", fake_kube.url, "--token", "test-token",
                 "--ca-cert-file", fake_kube.ca_file, "--kubernetes-version", "1.35", "--gang-scheduler", "volcano",
                 stdout=StringIO())
    return Cluster.objects.get(name="gpu-east")


def login(user):
    client = Client()
    client.force_login(user)
    return client


def change_form_data(response) -> dict:
    """What the browser would post back from an admin change page: every field's current value, inlines too."""
    data = {}

    def add(form):
        for name in form.fields:
            value = form[name].value()
            if value is None or value is False:
                continue
            data[form.add_prefix(name)] = "on" if value is True else value

    add(response.context["adminform"].form)
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        add(formset.management_form)
        for form in formset.forms:
            add(form)
    return data


def post_cluster(client, cluster, **changes):
    url = f"/admin/provisioning/cluster/{cluster.pk}/change/"
    page = client.get(url)
    assert page.status_code == 200
    return client.post(url, {**change_form_data(page), **changes})


def test_declared_peers_reach_the_cluster_as_network_policies_that_outlive_the_request(
    engineer, team_a, platform_user, east, fake_kube, eager_celery, django_capture_on_commit_callbacks
):
    response = post_cluster(login(platform_user), east, **NETWORK)
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else response
    gpu_request = request_submit(user=engineer, team=team_a, name="chat", raw_answers=VALID_ANSWERS)

    with django_capture_on_commit_callbacks(execute=True):
        request_approve(user=platform_user, request_id=gpu_request.pk)

    policies = {p["metadata"]["name"]: p["spec"]
                for p in fake_kube.find("networking.k8s.io/v1", "NetworkPolicy", "gpu-team-a", "")}
    assert set(policies) == {"default-deny-ingress", "allow-ingress-controller"}
    scraper = policies["default-deny-ingress"]["ingress"][0]["from"][1]
    assert scraper == {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                       "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}
    controller = policies["allow-ingress-controller"]["ingress"][0]["from"][0]
    assert controller["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}
    assert AppliedObject.objects.filter(request=None, kind="NetworkPolicy", namespace="gpu-team-a").count() == 2

    with django_capture_on_commit_callbacks(execute=True):
        request_cancel(user=engineer, request_id=gpu_request.pk)
    assert not fake_kube.find("apps/v1", "Deployment", "gpu-team-a", "")
    assert len(fake_kube.find("networking.k8s.io/v1", "NetworkPolicy", "gpu-team-a", "")) == 2


def test_a_cluster_that_declares_no_peers_still_denies_other_namespaces(
    engineer, team_a, platform_user, east, fake_kube, eager_celery, django_capture_on_commit_callbacks
):
    gpu_request = request_submit(user=engineer, team=team_a, name="chat", raw_answers=VALID_ANSWERS)
    with django_capture_on_commit_callbacks(execute=True):
        request_approve(user=platform_user, request_id=gpu_request.pk)
    (policy,) = fake_kube.find("networking.k8s.io/v1", "NetworkPolicy", "gpu-team-a", "")
    assert policy["spec"]["ingress"] == [{"from": [{"podSelector": {}}]}]


@pytest.mark.parametrize("changes, field, message", [
    ({"ingress_namespace": "Ingress_NGINX"}, "ingress_namespace", "is not a namespace name"),
    ({"metrics_pod_labels": '{"app": "prom etheus"}', "metrics_namespace": "monitoring"},
     "metrics_pod_labels", "is not a label value"),
    ({"metrics_pod_labels": '["prometheus"]', "metrics_namespace": "monitoring"},
     "metrics_pod_labels", "must be a mapping"),
    ({"ingress_pod_labels": '{"app.kubernetes.io/name": "ingress-nginx"}'}, "ingress_namespace",
     "Name the namespace"),
])
def test_bad_declarations_are_refused_on_their_field(platform_user, east, changes, field, message):
    response = post_cluster(login(platform_user), east, **changes)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert message in " ".join(errors[field]), errors
    east.refresh_from_db()
    assert (east.ingress_namespace, east.metrics_pod_labels) == ("", {})


def test_finance_cannot_change_what_may_reach_team_namespaces(finance_user, east):
    response = login(finance_user).post(f"/admin/provisioning/cluster/{east.pk}/change/", NETWORK)
    assert response.status_code in (302, 403)
    east.refresh_from_db()
    assert east.ingress_namespace == "" and east.metrics_namespace == ""


def test_register_cluster_declares_the_peers_and_refuses_bad_ones(inventory, fake_kube):
    call_command("register_cluster", "gpu-east", "--server", fake_kube.url, "--ingress-namespace", "ingress-nginx",
                 "--ingress-pod-label", "app.kubernetes.io/name=ingress-nginx", "--metrics-namespace", "monitoring",
                 stdout=StringIO())
    east = Cluster.objects.get(name="gpu-east")
    assert (east.ingress_namespace, east.ingress_pod_labels) == ("ingress-nginx",
                                                                 {"app.kubernetes.io/name": "ingress-nginx"})
    assert (east.metrics_namespace, east.metrics_pod_labels) == ("monitoring", {})

    with pytest.raises(CommandError, match="metrics_namespace: .*is not a namespace name"):
        call_command("register_cluster", "gpu-east", "--server", fake_kube.url, "--metrics-namespace", "Monitoring",
                     stdout=StringIO())
    with pytest.raises(CommandError, match="--metrics-pod-label takes KEY=VALUE"):
        call_command("register_cluster", "gpu-east", "--server", fake_kube.url, "--metrics-pod-label", "prometheus",
                     stdout=StringIO())
    east.refresh_from_db()
    assert east.metrics_namespace == "monitoring"


def test_engineers_can_read_what_may_reach_their_namespaces_but_not_change_it(api, engineer, east):
    Cluster.objects.filter(pk=east.pk).update(ingress_namespace="ingress-nginx", metrics_namespace="monitoring",
                                              metrics_pod_labels={"app.kubernetes.io/name": "prometheus"})
    body = api(engineer).get(f"/api/v1/clusters/{east.pk}/").json()
    assert (body["ingress_namespace"], body["ingress_pod_labels"]) == ("ingress-nginx", {})
    assert (body["metrics_namespace"], body["metrics_pod_labels"]) == ("monitoring",
                                                                       {"app.kubernetes.io/name": "prometheus"})
    response = api(engineer).patch(f"/api/v1/clusters/{east.pk}/", {"ingress_namespace": "x"}, format="json")
    assert response.status_code in (403, 405)
    east.refresh_from_db()
    assert east.ingress_namespace == "ingress-nginx"
