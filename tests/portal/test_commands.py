"""Bootstrap commands: exact names, idempotent, the token as the last line."""
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from portal.models import ApiToken, Membership, Team

pytestmark = pytest.mark.django_db


def run(*args) -> list[str]:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip().splitlines()


def test_create_team_twice_updates_without_duplicating():
    run("create_team", "vision", "--name", "Vision", "--cost-center", "CC-1")
    run("create_team", "vision", "--name", "Computer Vision")
    team = Team.objects.get()
    assert (team.slug, team.name, team.cost_center) == ("vision", "Computer Vision", "CC-1")


def test_create_team_rejects_a_slug_that_is_not_a_dns_label():
    with pytest.raises(CommandError, match="slug"):
        run("create_team", "Not_Valid", "--name", "x")
    assert not Team.objects.exists()


def test_create_portal_user_prints_the_token_last_and_is_idempotent():
    run("create_team", "vision", "--name", "Vision")
    run("create_team", "nlp", "--name", "NLP")
    first = run("create_portal_user", "alice", "--role", "engineer", "--team", "vision", "--password", "s3cret-pass")
    second = run("create_portal_user", "alice", "--role", "engineer", "--team", "vision", "--team", "nlp")
    user = get_user_model().objects.get(username="alice")
    # Only digests are stored, so a run cannot print the previous token again: it rotates the bootstrap token.
    client = APIClient()
    assert client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {second[-1]}").json()["username"] == "alice"
    assert client.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {first[-1]}").status_code == 401
    assert ApiToken.objects.get(user=user, revoked_at__isnull=True).prefix == second[-1][:12]
    assert Membership.objects.filter(user=user).count() == 2
    assert list(user.groups.values_list("name", flat=True)) == ["engineer"]
    assert user.check_password("s3cret-pass") and not user.is_staff


def test_platform_users_are_staff_and_role_changes_replace_the_old_role():
    run("create_portal_user", "pat", "--role", "finance")
    run("create_portal_user", "pat", "--role", "platform")
    user = get_user_model().objects.get(username="pat")
    assert list(user.groups.values_list("name", flat=True)) == ["platform"] and user.is_staff


def test_unknown_team_or_role_is_an_error():
    with pytest.raises(CommandError, match="unknown team"):
        run("create_portal_user", "x", "--role", "engineer", "--team", "ghost")
    with pytest.raises(CommandError):
        run("create_portal_user", "x", "--role", "wizard")
    assert not get_user_model().objects.filter(username="x").exists()


def test_load_demo_twice_gives_the_same_data():
    run("load_demo")
    from intake.models import GpuRequest

    counts = (Team.objects.count(), get_user_model().objects.count(), GpuRequest.objects.count())
    run("load_demo")
    assert (Team.objects.count(), get_user_model().objects.count(), GpuRequest.objects.count()) == counts
    assert GpuRequest.objects.filter(status="pending_approval").exists()
    assert GpuRequest.objects.filter(status="rejected").exists()
