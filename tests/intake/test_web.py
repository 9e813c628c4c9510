"""The engineer's pages: questionnaire with live preview, my requests, a request, cancel; login/logout."""
import pytest
from django.test import Client

from intake.models import GpuRequest
from workflows.services import request_submit
from tests.conftest import VALID_ANSWERS
from tests.support.celery_worker import eager

pytestmark = pytest.mark.django_db

FORM = {"team": None, "name": "web-svc", **{k: str(v) for k, v in VALID_ANSWERS.items()}}


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_pages_need_login(client):
    response = client.get("/requests/new/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_login_page_and_login_work(client, engineer):
    assert client.get("/accounts/login/").status_code == 200
    response = client.post("/accounts/login/", {"username": "eve", "password": "pw-for-tests-1"})
    assert response.status_code == 302
    assert client.get("/requests/").status_code == 200


def test_questionnaire_form_is_generated_from_the_definition(engineer, team_a, inventory):
    page = login(engineer).get("/requests/new/").content.decode()
    for key in ("workload_class", "tenancy", "latency", "data_sensitivity", "gpu_memory_gb", "replicas", "image"):
        assert f'name="{key}"' in page
    assert "default: 1" in page  # defaults shown, not pre-filled, so leaving them is visible as a default


def test_live_preview_follows_the_answers(engineer, team_a, inventory):
    client = login(engineer)
    form = {**FORM, "team": team_a.pk}
    small = client.post("/requests/preview/", form, HTTP_HX_REQUEST="true").content.decode()
    assert "1g.18gb" in small and "source-default" in small
    bigger = client.post("/requests/preview/", {**form, "gpu_memory_gb": "30"}, HTTP_HX_REQUEST="true").content.decode()
    assert "2g.35gb" in bigger
    broken = client.post("/requests/preview/", {**form, "image": "bad image"}, HTTP_HX_REQUEST="true").content.decode()
    assert "image" in broken and "preview-error" in broken
    assert GpuRequest.objects.count() == 0


def test_submit_creates_the_request_and_shows_it(engineer, team_a, inventory):
    client = login(engineer)
    response = client.post("/requests/new/", {**FORM, "team": team_a.pk})
    gpu_request = GpuRequest.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/requests/{gpu_request.pk}/"
    page = client.get(response["Location"]).content.decode()
    assert "Pending approval" in page and "hardware-isolated 1g.18gb slice" in page
    assert sorted(gpu_request.defaulted_answers) == ["data_sensitivity", "gpus_per_replica", "replicas"]


def test_submit_with_bad_answers_shows_field_errors_and_stores_nothing(engineer, team_a, inventory):
    response = login(engineer).post("/requests/new/", {**FORM, "team": team_a.pk, "replicas": "10000", "name": "Bad Name"})
    assert response.status_code == 200
    assert set(response.context["form"].errors) >= {"replicas", "name"}
    assert GpuRequest.objects.count() == 0


def test_engineer_cannot_submit_for_another_team(engineer, team_b, inventory):
    response = login(engineer).post("/requests/new/", {**FORM, "team": team_b.pk})
    assert response.status_code == 200 and "team" in response.context["form"].errors
    assert GpuRequest.objects.count() == 0


def test_request_list_shows_only_my_teams(engineer, engineer_b, team_a, team_b, inventory):
    request_submit(user=engineer, team=team_a, name="mine", raw_answers=VALID_ANSWERS)
    request_submit(user=engineer_b, team=team_b, name="theirs", raw_answers=VALID_ANSWERS)
    page = login(engineer).get("/requests/").content.decode()
    assert "mine" in page and "theirs" not in page


def test_other_teams_request_page_is_404(engineer, engineer_b, team_b, inventory):
    theirs = request_submit(user=engineer_b, team=team_b, name="theirs", raw_answers=VALID_ANSWERS)
    assert login(engineer).get(f"/requests/{theirs.pk}/").status_code == 404
    assert login(engineer).post(f"/requests/{theirs.pk}/cancel/").status_code == 404


def test_cancel_from_the_request_page(engineer, team_a, inventory):
    mine = request_submit(user=engineer, team=team_a, name="mine", raw_answers=VALID_ANSWERS)
    response = login(engineer).post(f"/requests/{mine.pk}/cancel/", {"comment": "changed my mind", "confirm": "on"})
    assert response.status_code == 302
    mine.refresh_from_db()
    assert mine.status == "cancelled" and mine.events.last().comment == "changed my mind"


def test_the_request_page_offers_only_what_the_reader_may_do(engineer, platform_user, platform_user_2, finance_user,
                                                          team_a, inventory):
    theirs = request_submit(user=engineer, team=team_a, name="theirs", raw_answers=VALID_ANSWERS)
    own = request_submit(user=platform_user, team=team_a, name="own", raw_answers=VALID_ANSWERS)

    def offers(user, gpu_request):
        page = login(user).get(f"/requests/{gpu_request.pk}/").content.decode()
        return {"cancel": 'data-testid="cancel-form"' in page, "review": "Review in the approval queue" in page}

    assert offers(engineer, theirs) == {"cancel": True, "review": False}
    # Finance reads every request but cancels none: no button that would only fail.
    assert offers(finance_user, theirs) == {"cancel": False, "review": False}
    assert offers(platform_user_2, theirs) == {"cancel": True, "review": True}
    # The platform team may still reject its own request, never approve it; the review page says which.
    assert offers(platform_user, own)["review"] is True
    GpuRequest.objects.filter(pk=theirs.pk).update(status="cancelled")
    assert offers(engineer, theirs) == {"cancel": False, "review": False}
    assert offers(platform_user_2, theirs) == {"cancel": False, "review": False}
    # The services enforce what the page offers.
    forbidden = login(finance_user).post(f"/requests/{own.pk}/cancel/", {"confirm": "on"}, follow=True)
    own.refresh_from_db()
    assert own.status == "pending_approval" and forbidden.status_code in (200, 403)


def test_forms_are_csrf_protected(engineer, team_a, inventory):
    client = Client(enforce_csrf_checks=True)
    client.force_login(engineer)
    assert client.post("/requests/new/", {**FORM, "team": team_a.pk}).status_code == 403
    assert GpuRequest.objects.count() == 0


def test_finance_has_no_new_request_page(finance_user):
    response = login(finance_user).get("/requests/new/")
    assert response.status_code == 302


def test_cancelling_a_running_request_needs_the_confirmation(engineer, platform_user, team_a, inventory):
    from workflows.services import request_approve

    mine = request_submit(user=engineer, team=team_a, name="mine", raw_answers=VALID_ANSWERS)
    request_approve(user=platform_user, request_id=mine.pk)
    GpuRequest.objects.filter(pk=mine.pk).update(status="running")
    client = login(engineer)
    page = client.get(f"/requests/{mine.pk}/").content.decode()
    assert 'name="confirm"' in page and "running pods stop" in page and "<script" not in page.split("</head>")[1]

    response = client.post(f"/requests/{mine.pk}/cancel/", {"comment": "oops"}, follow=True)
    mine.refresh_from_db()
    assert mine.status == "running"
    assert "nothing was cancelled" in response.content.decode()

    client.post(f"/requests/{mine.pk}/cancel/", {"comment": "done", "confirm": "on"})
    mine.refresh_from_db()
    assert mine.status == "cancelled"


def test_preview_names_are_the_names_applied(engineer, team_a, platform_user, tmp_path, settings,
                                             django_capture_on_commit_callbacks):
    """Preview, submit, approve: the demo clusters' GitOps applier writes the objects; their names are the
    preview's with the request id in place of the placeholder."""
    from workflows.services import request_approve
    from provisioning.demo import CLUSTERS
    from provisioning.inventory import cluster_declare
    from provisioning.models import AppliedObject

    settings.PORTAL_DATA_DIR = tmp_path
    for spec in CLUSTERS:
        spec = dict(spec)
        cluster_declare(pools=spec.pop("pools"), **spec)
    client = login(engineer)
    form = {**FORM, "team": team_a.pk, "name": "chat-serve"}
    preview = client.post("/requests/preview/", form, HTTP_HX_REQUEST="true")
    names = preview.context["manifest_kinds"]
    assert "Deployment chat-serve-r<id>" in names
    assert "r&lt;id&gt;" in preview.content.decode()  # the page explains the placeholder

    client.post("/requests/new/", form)
    gpu_request = GpuRequest.objects.get(name="chat-serve")
    with eager(), django_capture_on_commit_callbacks(execute=True):  # the apply runs in-process, as a worker would
        request_approve(user=platform_user, request_id=gpu_request.pk)
    applied = sorted(f"{o.kind} {o.name}" for o in AppliedObject.objects.filter(request=gpu_request))
    assert applied, list(gpu_request.provisioning_jobs.values_list("status", "message"))
    predicted = sorted(n.replace("<id>", str(gpu_request.pk)) for n in names if "<id>" in n)
    assert applied == predicted  # the team's shared objects (its Namespace, its queue) are not per request
    assert set(applied) <= {n.replace("<id>", str(gpu_request.pk)) for n in names}
