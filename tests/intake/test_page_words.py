"""Pages speak in words: no persona's main page shows a vocabulary identifier (`whole_gpu`, `device_plugin`,
`pending_approval`) or an answer key (`gpu_memory_gb`) where a person reads it. The API keeps the identifiers."""
from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.test import Client

from intake.choices import DataSensitivity, FabricIsolation, Latency, RequestStatus, Tenancy
from intake.questionnaire import QUESTIONS
from workflows.services import request_approve, request_submit
from provisioning.choices import GangScheduler, SchedulingModel, Strategy
from provisioning.inventory import team_quota_set
from tests.conftest import VALID_ANSWERS

pytestmark = pytest.mark.django_db

# Every identifier with an underscore, from the vocabularies and the questionnaire: none reads as a word.
IDENTIFIERS = sorted({
    value for choices in (RequestStatus, Strategy, SchedulingModel, GangScheduler, FabricIsolation, Tenancy,
                          Latency, DataSensitivity)
    for value in choices.values if "_" in value
} | {q.key for q in QUESTIONS if "_" in q.key})
TRAINING = {**VALID_ANSWERS, "workload_class": "training", "tenancy": "dedicated", "latency": "batch",
            "gpu_memory_gb": 80, "replicas": 2}


class _VisibleText(HTMLParser):
    """The text a person reads: text nodes and the values of buttons and titles, not markup or scripts."""

    def __init__(self):
        super().__init__()
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag, attrs):
        if tag in {"script", "style"}:
            self._hidden += 1
        for name, value in attrs:
            if name in {"title", "placeholder", "aria-label", "alt"} and value:
                self.parts.append(value)
            if tag == "input" and name == "value" and dict(attrs).get("type") in {"submit", "button"}:
                self.parts.append(value or "")

    def handle_endtag(self, tag):
        if tag in {"script", "style"}:
            self._hidden -= 1

    def handle_data(self, data):
        if not self._hidden:
            self.parts.append(data)


def raw_identifiers(html: str) -> list[str]:
    parser = _VisibleText()
    parser.feed(html)
    text = "\n".join(parser.parts)
    return [ident for ident in IDENTIFIERS if re.search(rf"(?<![\w/.-]){re.escape(ident)}(?![\w])", text)]


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def requests_in_every_state(engineer, platform_user, team_a, inventory):
    pending = request_submit(user=engineer, team=team_a, name="chat-serve", raw_answers=VALID_ANSWERS)
    approved = request_submit(user=engineer, team=team_a, name="train-run", raw_answers=TRAINING)
    request_approve(user=platform_user, request_id=approved.pk)
    return pending, approved


def test_the_identifier_list_is_the_vocabulary():
    assert {"whole_gpu", "time_slicing", "device_plugin", "pending_approval", "gpu_memory_gb"} <= set(IDENTIFIERS)
    assert raw_identifiers("<p>The decision: whole_gpu</p>") == ["whole_gpu"]
    assert raw_identifiers("<p>a whole GPU</p><script>x = 'whole_gpu'</script>") == []


def test_engineer_pages_show_words(engineer, team_a, requests_in_every_state):
    pending, approved = requests_in_every_state
    client = login(engineer)
    pages = {url: client.get(url) for url in ("/requests/", "/requests/new/", f"/requests/{pending.pk}/",
                                               f"/requests/{approved.pk}/")}
    pages["preview"] = client.post("/requests/preview/", {"team": team_a.pk, "name": "x",
                                                          **{k: str(v) for k, v in TRAINING.items()}})
    pages["preview with errors"] = client.post("/requests/preview/", {"team": team_a.pk, "gpu_memory_gb": "-3"})
    for url, response in pages.items():
        assert response.status_code == 200, url
        assert raw_identifiers(response.content.decode()) == [], url
    detail = pages[f"/requests/{pending.pk}/"].content.decode()
    assert "time-sliced" in detail or "MIG slice" in detail or "whole GPU" in detail
    assert "pending approval" in detail  # the history says the status in words


def test_preview_errors_name_the_question_not_the_key(engineer, team_a, inventory):
    html = login(engineer).post("/requests/preview/", {"team": team_a.pk, **{k: str(v) for k, v in VALID_ANSWERS.items()},
                                                       "gpu_memory_gb": "-3"}).content.decode()
    assert "GPU memory needed per replica" in html
    assert "gpu_memory_gb" not in html


def test_platform_and_finance_pages_show_words(platform_user, finance_user, requests_in_every_state):
    pending, approved = requests_in_every_state
    platform = login(platform_user)
    for url in ("/requests/", f"/requests/{pending.pk}/", f"/requests/{approved.pk}/",
                "/admin/intake/pendingapproval/", f"/admin/intake/pendingapproval/{pending.pk}/change/"):
        response = platform.get(url)
        assert response.status_code == 200, url
        assert raw_identifiers(response.content.decode()) == [], url
    finance = login(finance_user)
    for url in ("/requests/", f"/requests/{approved.pk}/"):
        response = finance.get(url)
        assert response.status_code == 200, url
        assert raw_identifiers(response.content.decode()) == [], url


def test_the_policy_diff_is_in_words_not_python_dicts(platform_user, engineer, team_a, inventory):
    from intake.models import Rule
    from intake.services import policy_version_draft_create

    request_submit(user=engineer, team=team_a, name="chat", raw_answers=VALID_ANSWERS)
    draft = policy_version_draft_create(user=platform_user)
    Rule.objects.filter(version=draft, key="inference-shared-latency").update(outcome={"strategy": "whole_gpu"})
    html = login(platform_user).get(f"/admin/intake/policyversion/{draft.pk}/review/").content.decode()
    assert raw_identifiers(html) == []
    assert "{&#x27;" not in html and "{'" not in html  # no dict repr, escaped or not
    assert "strategy: whole GPU" in html
    assert "MIG slice → whole GPU" in html


def test_the_summary_says_who_approved_it_once_approved(engineer, platform_user, team_a, inventory):
    gpu_request = request_submit(user=engineer, team=team_a, name="chat-serve", raw_answers=VALID_ANSWERS)
    client = login(engineer)
    before = client.get(f"/requests/{gpu_request.pk}/").content.decode()
    assert "after the platform team approves it" in before
    request_approve(user=platform_user, request_id=gpu_request.pk)
    after = client.get(f"/requests/{gpu_request.pk}/")
    summary = after.context["summary"]
    assert "after the platform team approves it" not in after.content.decode()
    assert "approved by pat on " in summary
    # Answers were left at their defaults, and the reasons table below marks them.
    assert re.search(r"; \d+ choices came from defaults, not decisions \(marked below\)\.$", summary)
    assert "(s)" not in summary


def test_an_automatic_approval_is_said_to_be_automatic(engineer, team_a, inventory):
    notebook = {"workload_class": "development", "tenancy": "multi_tenant", "latency": "batch", "gpu_memory_gb": 8,
                "image": "jupyter/base-notebook:latest"}
    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=16)
    gpu_request = request_submit(user=engineer, team=team_a, name="notebook", raw_answers=notebook)
    assert gpu_request.status == "approved"
    summary = login(engineer).get(f"/requests/{gpu_request.pk}/").context["summary"]
    assert "approved automatically on " in summary


def test_the_stored_summary_marks_nothing_below(engineer, team_a, inventory):
    # The API and the approval queue list show the stored summary with no reasons table under it.
    gpu_request = request_submit(user=engineer, team=team_a, name="chat-serve", raw_answers=VALID_ANSWERS)
    assert "marked below" not in gpu_request.decision.summary
    assert re.search(r"; \d+ choices came from defaults, not decisions\.$", gpu_request.decision.summary)
