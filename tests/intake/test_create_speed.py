"""Given the decision's inputs cached per process (intake.decision_cache), when requests are created through the API,
then a create takes a fixed handful of queries and reads neither the policy's rules, the inventory nor its own events
back, and any change to the policy or the inventory, by any write path, is seen by the very next create."""
from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test import Client

from intake.choices import PolicyStatus
from intake.decisions import Decision
from intake.models import PolicyVersion
from intake.services import policy_version_draft_create
from provisioning.models import Cluster
from tests.conftest import VALID_ANSWERS
from tests.support.admin import change_form_data

pytestmark = pytest.mark.django_db

# Token, its last-used stamp (written at most once a minute), team, roles with memberships (one UNION,
# portal.roles), the stamps with what the decision gates read first (the team's budget this month, if any:
# chargeback.budget_hooks), the request, its event, and the test transaction's savepoint around the service
# (SAVEPOINT, RELEASE): 9. The answer reads nothing back (its events are the ones the submission recorded,
# intake.selectors.request_loaded). Before the cache it was 15 once warm; before the gates' reads, 10.
CREATE_QUERIES = 9
INPUT_TABLES = ("intake_rule", "provisioning_cluster", "provisioning_nodepool", "provisioning_gpumodel")


def create(client, name, answers=VALID_ANSWERS):
    response = client.post("/api/v1/requests/", {"team": "team-a", "name": name, "answers": answers}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_a_warm_create_takes_a_fixed_handful_of_queries_and_reads_no_policy_inventory_or_event_rows(
    api, engineer, team_a, inventory, django_assert_max_num_queries
):
    client = api(engineer)
    create(client, "warm")

    with django_assert_max_num_queries(CREATE_QUERIES) as captured:
        created = create(client, "measured")

    assert Decision.from_json(created["decision"]).cluster == "gpu-east" and created["events"][0]["to_status"] == "pending_approval"
    read = [q["sql"] for q in captured.captured_queries
            if any(f'FROM "{t}"' in q["sql"] for t in (*INPUT_TABLES, "intake_requestevent"))]
    assert read == []


def test_an_admin_change_to_the_inventory_is_seen_by_the_next_create(api, engineer, team_a, inventory,
                                                                     platform_user):
    client = api(engineer)
    assert Decision.from_json(create(client, "before")["decision"]).cluster == "gpu-east"
    admin = Client()
    admin.force_login(platform_user)
    east = Cluster.objects.get(name="gpu-east")
    url = f"/admin/provisioning/cluster/{east.pk}/change/"
    data = change_form_data(admin.get(url))
    data.pop("enabled")  # an unticked checkbox is absent from the POST
    assert admin.post(url, data).status_code == 302

    assert Decision.from_json(create(client, "after")["decision"]).cluster != "gpu-east"


def test_a_new_policy_in_force_is_seen_by_the_next_create(api, engineer, team_a, inventory, platform_user):
    client = api(engineer)
    before = Decision.from_json(create(client, "before")["decision"])
    draft = policy_version_draft_create(user=platform_user)
    rule = draft.rules.get(key=before.rule)
    rule.outcome = {"strategy": "whole_gpu"}
    rule.save()
    platform = api(platform_user)
    digest = platform.get(f"/api/v1/policy/versions/{draft.number}/diff/").json()["digest"]
    assert platform.post(f"/api/v1/policy/versions/{draft.number}/sign-off/", {"digest": digest},
                         format="json").status_code == 200

    after = Decision.from_json(create(client, "after")["decision"])

    assert (before.policy_version, before.strategy) == (draft.number - 1, "mig")
    assert (after.policy_version, after.strategy) == (draft.number, "whole_gpu")


def test_a_failed_create_leaves_the_connection_usable(api, engineer, team_a, inventory):
    """The duplicate name's IntegrityError is caught without a savepoint of its own; the service's atomic block
    still rolls it back, so the next request on the same connection works."""
    client = api(engineer)
    create(client, "twice")
    again = client.post("/api/v1/requests/", {"team": "team-a", "name": "twice", "answers": VALID_ANSWERS},
                        format="json")
    assert again.status_code == 400 and "name" in again.json()
    create(client, "next")


# --- committed changes, as another process makes them ---------------------------------------------------------


def raw_sql(statement: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement)


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_committed_raw_sql_change_is_seen_by_the_next_create(api, engineer, team_a, inventory):
    """The triggers cover every write path, not only the ORM's: a statement no Python code of ours sees."""
    client = api(engineer)
    assert Decision.from_json(create(client, "before")["decision"]).cluster == "gpu-east"

    raw_sql("UPDATE provisioning_cluster SET enabled = false WHERE name = 'gpu-east'")

    assert Decision.from_json(create(client, "after")["decision"]).cluster != "gpu-east"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_inputs_seen_in_a_rolled_back_transaction_are_not_served_after_another_change(api, engineer, team_a,
                                                                                      inventory):
    """A rolled-back transaction may have cached what it saw under the generation it bumped to; that generation is
    never handed out again (a sequence), so a later, different change cannot be mistaken for it."""
    from intake.services import request_evaluate

    client = api(engineer)
    with pytest.raises(RuntimeError), transaction.atomic():
        raw_sql("UPDATE provisioning_cluster SET enabled = false WHERE name = 'gpu-east'")
        assert request_evaluate(raw_answers=VALID_ANSWERS).decision.cluster != "gpu-east"
        raise RuntimeError("roll back")
    raw_sql("UPDATE provisioning_cluster SET description = 'changed' WHERE name = 'gpu-west'")

    assert Decision.from_json(create(client, "after")["decision"]).cluster == "gpu-east"


def test_no_active_policy_is_a_404_not_a_500(api, engineer, team_a, inventory):
    PolicyVersion.objects.filter(status=PolicyStatus.ACTIVE).update(status=PolicyStatus.RETIRED)
    response = api(engineer).post("/api/v1/requests/", {"team": "team-a", "name": "x", "answers": VALID_ANSWERS},
                                  format="json")
    assert response.status_code == 404 and "No routing policy is active" in response.content.decode()
