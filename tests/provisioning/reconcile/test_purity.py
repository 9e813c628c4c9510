"""The status rules are pure Python like the renderer: the rules of provisioning/reconcile (and the package's
__init__, which loads the Django side only on first use) import nothing from Django."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import provisioning.reconcile
from tests.provisioning.manifests.test_purity import REPO, _imports

PACKAGE = Path(provisioning.reconcile.__file__).resolve().parent
PURE = ("__init__.py", "facts.py", "pod_fields.py", "rules.py", "store.py", "words.py")


def test_no_pure_module_of_the_package_imports_django_celery_or_the_kubernetes_client():
    offenders = {
        path.name: sorted(n for n in _imports(path) if n.split(".")[0] in {"django", "rest_framework", "celery",
                                                                             "kubernetes"})
        for path in (PACKAGE / name for name in PURE)
    }
    assert not {name: mods for name, mods in offenders.items() if mods}


def test_assessing_pods_loads_no_django_module():
    code = (
        "import sys, datetime\n"
        "from provisioning.reconcile import RequestContext, Thresholds, assess, facts_by_request\n"
        "from tests.provisioning.reconcile.pods import pod_for, rendered_workload\n"
        "t = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)\n"
        "pods = [pod_for(rendered_workload(), index=i, created=t) for i in range(4)]\n"
        "facts = facts_by_request(pods, label_domain='gpu-portal.io')[1]\n"
        "d = datetime.timedelta(minutes=15)\n"
        "assess(facts, RequestContext(1, 'provisioning', 'training', 4, 4, t), Thresholds(d, None, d, None), t)\n"
        "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "assert not loaded, loaded\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
