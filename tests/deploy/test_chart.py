"""The Helm chart rendered without helm (deploy/helmlite.py), every object validated against the Kubernetes 1.35
schemas, and the properties the issue asks for checked on the rendered objects."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from deploy import helmlite, rbac
from deploy.helmlite import TemplateError, parse, render_objects

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "gpu-portal"
ALL_ON = {"ingress": {"enabled": True, "className": "nginx", "tlsSecretName": "portal-tls"},
          "worker": {"persistence": {"existingClaim": "portal-data"}},
          "extraEnvFrom": [{"configMapRef": {"name": "portal-oidc"}}],
          "nodeSelector": {"kubernetes.io/os": "linux"}}


def by_kind_and_name(objects):
    return {(o["kind"], o["metadata"]["name"]): o for o in objects}


@pytest.fixture(scope="module")
def rendered():
    return by_kind_and_name(render_objects(CHART, release_name="portal", namespace="gpu"))


@pytest.mark.parametrize("values", [{}, ALL_ON, {"rbac": {"create": False}}], ids=["defaults", "all-on", "no-rbac"])
def test_every_rendered_object_is_valid_kubernetes_1_35(values):
    objects = render_objects(CHART, values)
    assert objects
    for obj in objects:
        kubernetes_validate.validate(obj, "1.35.0", strict=True)


def test_the_chart_deploys_web_worker_beat_migrations_and_rbac(rendered):
    assert set(rendered) == {
        ("Deployment", "portal-web"), ("Deployment", "portal-worker"), ("Deployment", "portal-beat"),
        ("Service", "portal-web"), ("Job", "portal-migrate"), ("ServiceAccount", "portal-gpu-portal"),
        ("ClusterRole", "portal-gpu-portal"), ("ClusterRoleBinding", "portal-gpu-portal"),
        ("NetworkPolicy", "portal-deny-ingress"), ("NetworkPolicy", "portal-web"), ("NetworkPolicy", "portal-egress"),
        ("NetworkPolicy", "portal-web-egress"), ("NetworkPolicy", "portal-worker-egress"),
        ("PodDisruptionBudget", "portal-web"), ("PodDisruptionBudget", "portal-worker"),
    }


def test_web_and_worker_run_two_replicas_and_a_drain_keeps_one_of_each(rendered):
    for component in ["web", "worker"]:
        deployment = rendered[("Deployment", f"portal-{component}")]
        budget = rendered[("PodDisruptionBudget", f"portal-{component}")]
        assert deployment["spec"]["replicas"] == 2
        assert budget["spec"]["minAvailable"] == 1 < deployment["spec"]["replicas"]  # a drain can proceed
        assert budget["spec"]["selector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
        requests = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
        assert set(requests) == {"cpu", "memory"}
    # beat must stay one: two would send every scheduled task twice.
    assert rendered[("Deployment", "portal-beat")]["spec"]["replicas"] == 1
    assert ("PodDisruptionBudget", "portal-beat") not in rendered


def pod(rendered, kind, name):
    return rendered[(kind, name)]["spec"]["template"]["spec"]


def test_one_image_for_web_worker_beat_and_migrations(rendered):
    images = {c["image"] for kind, name in rendered if kind in {"Deployment", "Job"}
              for c in pod(rendered, kind, name)["containers"]}
    assert images == {"registry.example.com/gpu-golden-path-portal:0.1.0"}
    commands = {name: pod(rendered, kind, name)["containers"][0]["args"][:2] for kind, name in rendered
                if kind in {"Deployment", "Job"}}
    assert commands == {"portal-web": ["gunicorn", "portal.wsgi:application"], "portal-worker": ["celery", "-A"],
                        "portal-beat": ["celery", "-A"], "portal-migrate": ["python", "manage.py"]}


def test_web_is_probed_on_healthz_and_readyz(rendered):
    container = pod(rendered, "Deployment", "portal-web")["containers"][0]
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    # No Host or X-Forwarded-Proto header needed: the probe endpoints answer any Host over plain HTTP
    # (tests/portal/test_production.py checks that with DEBUG off).


def test_every_pod_runs_as_non_root_read_only_without_capabilities(rendered):
    for kind, name in rendered:
        if kind not in {"Deployment", "Job"}:
            continue
        spec = pod(rendered, kind, name)
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                               "capabilities": {"drop": ["ALL"]}}, name
            assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
            assert {"secretRef": {"name": "gpu-portal"}} in container["envFrom"]
            assert container["resources"]["limits"]["memory"]


def test_worker_and_beat_are_probed_on_their_heartbeat_files(rendered):
    worker = pod(rendered, "Deployment", "portal-worker")["containers"][0]
    heartbeat = worker["args"][worker["args"].index("--heartbeat-file") + 1]
    assert worker["livenessProbe"]["exec"]["command"][:4] == ["python", "-m", "portal.heartbeat_check", heartbeat]
    assert "inspect ping --destination celery@$HOSTNAME" in worker["readinessProbe"]["exec"]["command"][-1]
    beat = pod(rendered, "Deployment", "portal-beat")["containers"][0]
    env = {e["name"]: e.get("value") for e in beat["env"]}
    assert beat["args"][beat["args"].index("--scheduler") + 1] == "portal.heartbeat:HeartbeatScheduler"
    for probe in ("livenessProbe", "readinessProbe"):
        command = beat[probe]["exec"]["command"]
        assert command[:4] == ["python", "-m", "portal.heartbeat_check", env["BEAT_HEARTBEAT_FILE"]]
        # Beat ticks at least every 300 s (beat_max_loop_interval): a shorter limit would restart a healthy beat.
        assert float(command[command.index("--max-age") + 1]) > 300
    for container in (worker, beat):  # the files live on the writable /tmp volume
        assert heartbeat.startswith("/tmp/") and env["BEAT_HEARTBEAT_FILE"].startswith("/tmp/")
        assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]


def test_only_the_web_port_accepts_connections_and_only_from_the_declared_peers(rendered):
    deny = rendered[("NetworkPolicy", "portal-deny-ingress")]["spec"]
    assert deny == {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "gpu-portal",
                                                    "app.kubernetes.io/instance": "portal"}},
                    "policyTypes": ["Ingress"], "ingress": []}
    web = rendered[("NetworkPolicy", "portal-web")]["spec"]
    web_pod = rendered[("Deployment", "portal-web")]["spec"]["template"]
    assert web["podSelector"]["matchLabels"].items() <= web_pod["metadata"]["labels"].items()
    (rule,) = web["ingress"]
    assert rule["ports"] == [{"port": "http", "protocol": "TCP"}]
    assert {"name": "http", "containerPort": 8000} in web_pod["spec"]["containers"][0]["ports"]
    assert [peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] for peer in rule["from"]] == [
        "ingress-nginx", "monitoring"]
    for name in ("portal-worker", "portal-beat"):  # selected by the deny policy, by no allowing one
        labels = rendered[("Deployment", name)]["spec"]["template"]["metadata"]["labels"]
        assert deny["podSelector"]["matchLabels"].items() <= labels.items()
        assert not web["podSelector"]["matchLabels"].items() <= labels.items()


def test_without_peers_the_web_policy_is_not_rendered_rather_than_open_to_all():
    objects = by_kind_and_name(render_objects(CHART, {"networkPolicy": {"webFrom": []}}, release_name="portal"))
    assert ("NetworkPolicy", "portal-deny-ingress") in objects and ("NetworkPolicy", "portal-web") not in objects
    objects = by_kind_and_name(render_objects(CHART, {"networkPolicy": {"enabled": False}}, release_name="portal"))
    assert not [kind for kind, _ in objects if kind == "NetworkPolicy"]


def test_beat_is_a_single_replica_replaced_not_rolled(rendered):
    beat = rendered[("Deployment", "portal-beat")]["spec"]
    assert beat["replicas"] == 1 and beat["strategy"] == {"type": "Recreate"}


def test_only_the_worker_gets_the_service_account_token(rendered):
    """The worker alone calls the Kubernetes API; the web pods (the admin's sync queues a task), beat and the
    migrations mount no token."""
    spec = pod(rendered, "Deployment", "portal-worker")
    assert spec["serviceAccountName"] == "portal-gpu-portal" and spec["automountServiceAccountToken"] is True
    web = pod(rendered, "Deployment", "portal-web")
    assert web["automountServiceAccountToken"] is False and "serviceAccountName" not in web
    assert pod(rendered, "Deployment", "portal-beat")["automountServiceAccountToken"] is False
    assert pod(rendered, "Job", "portal-migrate")["automountServiceAccountToken"] is False
    assert rendered[("ServiceAccount", "portal-gpu-portal")]["automountServiceAccountToken"] is False


def test_the_cluster_role_is_the_declared_one_and_bound_to_the_service_account(rendered):
    role = rendered[("ClusterRole", "portal-gpu-portal")]
    assert role["rules"] == [rule.as_k8s() for rule in rbac.RULES]
    binding = rendered[("ClusterRoleBinding", "portal-gpu-portal")]
    assert binding["roleRef"]["name"] == "portal-gpu-portal"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "portal-gpu-portal", "namespace": "gpu"}]


def test_migrations_run_as_a_pre_install_and_pre_upgrade_hook(rendered):
    job = rendered[("Job", "portal-migrate")]
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert pod(rendered, "Job", "portal-migrate")["containers"][0]["args"] == [
        "python", "manage.py", "migrate", "--no-input"]


def test_optional_parts_follow_the_values():
    objects = by_kind_and_name(render_objects(CHART, ALL_ON, release_name="portal"))
    ingress = objects[("Ingress", "portal-web")]["spec"]
    assert ingress["ingressClassName"] == "nginx" and ingress["tls"][0]["secretName"] == "portal-tls"
    worker = pod(objects, "Deployment", "portal-worker")
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "portal-data"}} in worker["volumes"]
    assert worker["containers"][0]["envFrom"][1] == {"configMapRef": {"name": "portal-oidc"}}
    assert worker["nodeSelector"] == {"kubernetes.io/os": "linux"}

    without_rbac = by_kind_and_name(render_objects(CHART, {"rbac": {"create": False}}, release_name="portal"))
    assert not {kind for kind, _ in without_rbac} & {"ServiceAccount", "ClusterRole", "ClusterRoleBinding"}
    assert "serviceAccountName" not in pod(without_rbac, "Deployment", "portal-web")


def test_the_cli_prints_the_manifests_like_helm_template():
    result = subprocess.run([sys.executable, "-m", "deploy.helmlite", str(CHART), "--set", "ingress.enabled=true",
                             "--set", "web.replicas=3"], cwd=ROOT, capture_output=True, text=True, check=True)
    documents = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert by_kind_and_name(documents)[("Deployment", "gpu-portal-web")]["spec"]["replicas"] == 3
    assert ("Ingress", "gpu-portal-web") in by_kind_and_name(documents)


# --- the renderer -----------------------------------------------------------------------------------------------


def render(source, values=None):
    return helmlite.Renderer({"Values": values or {}, "Release": {"Name": "r"}, "Chart": {"AppVersion": "1.0"}}
                             ).render(parse(source))


def test_renderer_trims_whitespace_like_go_templates():
    assert render("a:\n  {{- if .Values.x }}\n  b: 1\n  {{- end }}\nc: 2", {"x": True}) == "a:\n  b: 1\nc: 2"
    assert render("a:\n  {{- if .Values.x }}\n  b: 1\n  {{- end }}\nc: 2", {"x": False}) == "a:\nc: 2"
    assert render("x {{- /* note */ -}} y") == "xy"


def test_renderer_functions_and_pipelines():
    values = {"tag": "", "list": [{"name": "A", "value": "1"}], "n": 0, "s": 'say "hi"'}
    assert render('{{ .Values.tag | default .Chart.AppVersion }}', values) == "1.0"
    assert render("{{ .Values.s | quote }}", values) == '"say \\"hi\\""'
    assert render("env:{{ toYaml .Values.list | nindent 2 }}", values) == "env:\n  - name: A\n    value: '1'"
    assert render("{{ if .Values.n }}yes{{ else }}no{{ end }}", values) == "no"
    assert render('{{ default "x" .Values.tag }}', values) == "x"


@pytest.mark.parametrize("source, message", [
    ("{{ .Values.missing }}", ".Values.missing is not defined"),
    ("{{ range .Values.list }}{{ end }}", "unsupported template syntax"),
    ('{{ include "x" . }}', "unsupported template syntax"),
    ("{{ .Values.x | upper }}", "unsupported function 'upper'"),
    ("{{ if .Values.x }}", "without {{ end }}"),
    ("{{ .Values.map }}", "use toYaml"),
    ('{{ required "image.tag is required" .Values.empty }}', "image.tag is required"),
])
def test_renderer_refuses_what_it_does_not_implement(source, message):
    with pytest.raises(TemplateError, match=message.replace("(", r"\(").replace("{", r"\{")):
        render(source, {"x": 1, "map": {"a": 1}, "empty": "", "list": []})


def test_egress_goes_only_to_dns_the_databases_the_identity_provider_and_the_api_servers(rendered):
    """Every pod: DNS, PostgreSQL, Redis; web adds HTTPS outside the private ranges (the identity provider); the
    worker adds the API servers (private ranges, 443/6443), Prometheus, and e-mail and webhooks outside the
    private ranges. Nothing reaches the link-local metadata address."""
    selects = lambda policy, name: policy["spec"]["podSelector"]["matchLabels"].items() <= (  # noqa: E731
        rendered[("Deployment", name)]["spec"]["template"]["metadata"]["labels"].items())
    every = rendered[("NetworkPolicy", "portal-egress")]
    web = rendered[("NetworkPolicy", "portal-web-egress")]
    worker = rendered[("NetworkPolicy", "portal-worker-egress")]
    for policy in (every, web, worker):
        assert policy["spec"]["policyTypes"] == ["Egress"]
    assert all(selects(every, name) for name in ("portal-web", "portal-worker", "portal-beat"))
    assert selects(web, "portal-web") and not selects(web, "portal-worker")
    assert selects(worker, "portal-worker") and not selects(worker, "portal-web") and not selects(worker, "portal-beat")
    ports = lambda policy: sorted(p["port"] for rule in policy["spec"]["egress"] for p in rule["ports"])  # noqa: E731
    assert ports(every) == [53, 53, 5432, 6379] and ports(web) == [443]
    assert ports(worker) == [80, 443, 443, 587, 6443, 9090]
    blocks = [peer["ipBlock"] for policy in (web, worker) for rule in policy["spec"]["egress"] for peer in rule["to"]
              if "ipBlock" in peer]
    assert all("169.254.0.0/16" in block.get("except", []) or block["cidr"] != "0.0.0.0/0" for block in blocks)
    assert not any(block["cidr"].startswith("169.254.") for block in blocks)


def test_the_web_pods_believe_forwarded_addresses_from_the_ingress_only(rendered):
    """The sign-in lockout counts per account and client address: behind the ingress, the client address comes
    from X-Forwarded-For, believed only on connections from the proxies, which the web policy limits to the
    ingress controller (and Prometheus) in the cluster's private ranges."""
    env = {e["name"]: e.get("value") for e in pod(rendered, "Deployment", "portal-web")["containers"][0]["env"]}
    proxies = env["PORTAL_TRUSTED_PROXIES"].split(",")
    assert "10.0.0.0/8" in proxies and "0.0.0.0/0" not in proxies
    assert "PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS" not in env and "PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT" not in env
    peers = rendered[("NetworkPolicy", "portal-web")]["spec"]["ingress"][0]["from"]
    assert [p["podSelector"]["matchLabels"]["app.kubernetes.io/name"] for p in peers] == ["ingress-nginx", "prometheus"]
