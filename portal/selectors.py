"""Reads for teams and visibility. Every team-scoped query in the portal goes through `team_visible_ids`."""
from __future__ import annotations

from datetime import datetime

from django.core.cache import cache
from django.db.models import Q, QuerySet
from django.utils import timezone

from .models import ApiToken, Team
from .choices import Role
from .errors import NotFound, PermissionDenied
from .roles import is_finance, is_platform, sees_all_teams, user_roles
from .services import WORKER_HEARTBEAT_CACHE_KEY


def team_list_visible(*, user) -> QuerySet[Team]:
    if sees_all_teams(user):
        return Team.objects.all()
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user)


def team_visible_ids(*, user) -> set[int] | None:
    """None means "every team" (platform, finance); otherwise the ids of the user's teams."""
    if sees_all_teams(user):
        return None
    cached = getattr(user, "_portal_team_ids", None)
    if cached is None:
        cached = set(team_list_visible(user=user).values_list("id", flat=True))
        user._portal_team_ids = cached
    return cached


def team_list_requestable(*, user) -> QuerySet[Team]:
    """Teams this user may request GPUs for: engineers their own teams, the platform team any team."""
    if is_platform(user):
        return Team.objects.all()
    if Role.ENGINEER in user_roles(user):
        return Team.objects.filter(memberships__user=user)
    return Team.objects.none()


def team_can_request_for(*, user, team: Team) -> bool:
    """Engineers request for their own teams, the platform team for any team; finance never."""
    if is_platform(user):
        return True
    return Role.ENGINEER in user_roles(user) and team.id in (team_visible_ids(user=user) or set())


def team_webhook_get(*, user, slug: str) -> Team:
    """A team's webhook settings, secret included: for the team's members and the platform team only (finance
    reads teams, but a signing secret is not a figure it needs)."""
    team = Team.objects.filter(slug=slug).first()
    if team is None or not (is_platform(user) or team.memberships.filter(user=user).exists()):
        if team is not None and is_finance(user):
            raise PermissionDenied("Only the team's members and the platform team see its webhook secret.")
        raise NotFound("No such team.")
    return team


def worker_heartbeat() -> dict | None:
    """The last heartbeat a worker recorded (portal.tasks.ping), with its age in seconds; None if never."""
    heartbeat = cache.get(WORKER_HEARTBEAT_CACHE_KEY)
    if not heartbeat:
        return None
    age = (timezone.now() - datetime.fromisoformat(heartbeat["at"])).total_seconds()
    return {**heartbeat, "age_seconds": round(age, 3)}


def token_live_count(*, user) -> int:
    """How many of the user's tokens work: neither revoked nor expired."""
    return (ApiToken.objects.filter(user=user, revoked_at__isnull=True)
            .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())).count())


def token_list(*, user) -> QuerySet[ApiToken]:
    """A user's own API tokens, newest first. Nobody lists another user's here (the admin is the platform's)."""
    if not user.is_authenticated:
        return ApiToken.objects.none()
    return ApiToken.objects.filter(user=user).order_by("-created_at", "-id")
