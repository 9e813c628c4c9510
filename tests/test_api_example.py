"""docs/api.md's first example works as written, in a second terminal while the demo runs: its shell block is run
by bash from a checkout whose var/log/demo-logins.txt is what `load_demo` printed, against a live server holding
the demo data (only the address is changed to the test server's)."""
from __future__ import annotations

import re
import shutil
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from intake.models import GpuRequest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


def first_example() -> str:
    text = (ROOT / "docs" / "api.md").read_text()
    return re.search(r"## Examples.*?```bash\n(.*?)```", text, re.S).group(1)


@pytest.mark.skipif(not shutil.which("curl"), reason="the example uses curl")
def test_the_first_example_of_the_api_guide_runs_against_the_demo(live_server, settings, tmp_path):
    settings.PORTAL_DATA_DIR = tmp_path / "data"
    logins = StringIO()
    call_command("load_demo", stdout=logins)
    (tmp_path / "var" / "log").mkdir(parents=True)
    (tmp_path / "var" / "log" / "demo-logins.txt").write_text(logins.getvalue())
    script = first_example().replace("http://127.0.0.1:8000", live_server.url)
    assert "var/log/demo-logins.txt" in script and "manage.py" not in script.split("\n# ")[0]

    result = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)

    assert result.returncode == 0, result.stderr
    assert '"strategy":"mig"' in result.stdout.replace(" ", "") and '"mig_profile":"1g.18gb"' in result.stdout
    asked = GpuRequest.objects.get(team__slug="vision", name="chat-serving")
    assert asked.status in ("approved", "provisioning"), asked.status  # alice asked, pat approved it
    assert f'"request_id":{asked.pk}' in result.stdout.replace(" ", "") and "Waiting for the platform team" in result.stdout
