"""The create answer is built from the request just written (without reading its row again, bench/api_load.py);
it must be exactly what reading the request returns."""
import pytest

from provisioning.inventory import team_quota_set
from tests.conftest import VALID_ANSWERS

pytestmark = pytest.mark.django_db

DEVELOPMENT = {"workload_class": "development", "tenancy": "multi_tenant", "latency": "batch", "gpu_memory_gb": 8,
               "image": "jupyter/base-notebook:latest"}


@pytest.mark.parametrize("answers, status", [(VALID_ANSWERS, "pending_approval"), (DEVELOPMENT, "approved")])
def test_the_create_answer_is_the_stored_request(api, engineer, team_a, inventory, answers, status):
    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=1)  # the rule approves only with a quota
    client = api(engineer)
    created = client.post("/api/v1/requests/", {"team": "team-a", "name": "same", "answers": answers}, format="json")
    assert created.status_code == 201 and created.json()["status"] == status

    read = client.get(f"/api/v1/requests/{created.json()['id']}/")

    assert created.json() == read.json()


def test_a_create_held_for_review_answers_with_its_note_as_read(api, engineer, team_a, inventory):
    """No quota on the strategy: the rule's automatic approval does not hold, and the submission records why beside
    its transition. The answer shows both events, built without reading them back, exactly as a read shows them."""
    client = api(engineer)
    created = client.post("/api/v1/requests/", {"team": "team-a", "name": "held", "answers": DEVELOPMENT},
                          format="json")
    assert created.status_code == 201 and created.json()["status"] == "pending_approval"
    assert [(e["kind"], e["to_status"]) for e in created.json()["events"]] == [
        ("transition", "pending_approval"), ("note", "")]

    read = client.get(f"/api/v1/requests/{created.json()['id']}/")

    assert created.json() == read.json()
