"""Writes for teams, people and roles. Idempotent, so bootstrap scripts can run them again."""
from __future__ import annotations

import logging

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token

from .choices import Role
from .errors import NotFound, PermissionDenied
from .models import Membership, Team
from .roles import is_platform, user_roles
from .webhooks import secret_generate

logger = logging.getLogger(__name__)


@transaction.atomic
def team_upsert(*, slug: str, name: str, cost_center: str | None = None) -> tuple[Team, bool]:
    """Create the team, or update its name (and cost centre when given). Returns (team, created)."""
    team = Team(slug=slug, name=name, cost_center=cost_center or "")
    team.full_clean(validate_unique=False)
    defaults = {"name": name}
    if cost_center is not None:
        defaults["cost_center"] = cost_center
    return Team.objects.update_or_create(slug=slug, defaults=defaults)


def role_groups_ensure() -> dict[str, Group]:
    return {role: Group.objects.get_or_create(name=role)[0] for role in Role.values}


@transaction.atomic
def user_upsert(
    *,
    username: str,
    role: str,
    team_slugs: list[str] = (),
    password: str | None = None,
    email: str = "",
) -> tuple[object, Token, bool]:
    """Create or update a portal user with exactly one role and the given team memberships.

    Memberships are added, never removed, so running a bootstrap script twice is harmless.
    Platform users are staff (they approve in the admin), and so is finance (rate cards and month close; the
    admin mixins decide what each role sees there); engineers are not.
    """
    if role not in Role.values:
        raise ValueError(f"role must be one of {', '.join(Role.values)}")
    teams = list(Team.objects.filter(slug__in=team_slugs))
    missing = sorted(set(team_slugs) - {team.slug for team in teams})
    if missing:
        raise ValueError(f"unknown team(s): {', '.join(missing)}")

    user_model = get_user_model()
    user, created = user_model.objects.get_or_create(username=username, defaults={"email": email})
    user.is_staff = role in (Role.PLATFORM, Role.FINANCE)
    if email:
        user.email = email
    if password:
        user.set_password(password)
    elif created:
        user.set_unusable_password()
    user.save()

    groups = role_groups_ensure()
    user.groups.remove(*[group for name, group in groups.items() if name != role])
    user.groups.add(groups[role])
    for team in teams:
        Membership.objects.get_or_create(user=user, team=team)
    token, _ = Token.objects.get_or_create(user=user)
    return user, token, created


# --- worker heartbeat (portal.tasks.ping) -------------------------------------------------------------------------

WORKER_HEARTBEAT_CACHE_KEY = "ops:worker-heartbeat"


def worker_heartbeat_record(*, worker: str, task_id: str, request_id: str) -> dict:
    """Remember the last ping a worker ran. Kept in the shared cache (Redis): every process sees it."""
    heartbeat = {"worker": worker, "at": timezone.now().isoformat(), "task_id": task_id, "request_id": request_id}
    cache.set(WORKER_HEARTBEAT_CACHE_KEY, heartbeat, timeout=None)
    return heartbeat


def worker_ping_dispatch(*, user) -> None:
    """Send a `portal.ping` task (after commit); its heartbeat carries the caller's request id."""
    from .tasks import ping  # tasks call services: imported here to keep the import graph acyclic

    if not is_platform(user):
        raise PermissionDenied("Only the platform team pings the workers.")
    ping.delay_on_commit()


# --- single sign-on (portal.oidc) ---------------------------------------------------------------------------------


@transaction.atomic
def user_sync_identity(
    *,
    username: str,
    role: str,
    team_slugs: list[str],
    email: str = "",
    first_name: str = "",
    last_name: str = "",
):
    """Create or update a user from the identity provider's word: its groups decide the role and the teams.

    Teams are never created here (a team carries a cost centre the platform team sets with `create_team`): group
    names of unknown teams are ignored. For SSO users the provider owns membership, so memberships of teams its
    groups no longer name are removed. A local password, if the account has one, keeps working.
    """
    known = sorted(Team.objects.filter(slug__in=team_slugs).values_list("slug", flat=True))
    unknown = sorted(set(team_slugs) - set(known))
    user, _, _ = user_upsert(username=username, role=role, team_slugs=known, email=email)
    Membership.objects.filter(user=user).exclude(team__slug__in=known).delete()
    if (user.first_name, user.last_name) != (first_name, last_name):
        user.first_name, user.last_name = first_name, last_name
        user.save(update_fields=["first_name", "last_name"])
    if unknown:
        logger.info(
            "SSO user %s is in groups of unknown teams (%s): ignored until the platform team creates them",
            username, ", ".join(unknown),
        )
    return user


# --- team webhooks (portal.webhooks) ------------------------------------------------------------------------------


def _check_manages_webhook(user, team: Team) -> None:
    """The platform team, and the team's own engineers; finance changes nothing, other teams see nothing."""
    if is_platform(user):
        return
    if not Membership.objects.filter(user=user, team=team).exists():
        raise NotFound("No such team.")
    if Role.ENGINEER not in user_roles(user):
        raise PermissionDenied("Only the team's engineers and the platform team change its webhook.")


@transaction.atomic
def team_webhook_set(*, user, team: Team, url: str) -> Team:
    """Set (or clear, with "") the team's webhook URL, checked against the outbound policy; the first URL gets a
    signing secret. Raises ValidationError on `webhook_url`."""
    _check_manages_webhook(user, team)
    team = Team.objects.select_for_update().get(pk=team.pk)
    team.webhook_url = url
    team.full_clean(validate_unique=False)
    if url and not team.webhook_secret:
        team.webhook_secret = secret_generate()
    team.save(update_fields=["webhook_url", "webhook_secret"])
    return team


@transaction.atomic
def team_webhook_secret_rotate(*, user, team: Team) -> Team:
    """A new signing secret; notices not yet sent are signed with it."""
    _check_manages_webhook(user, team)
    team = Team.objects.select_for_update().get(pk=team.pk)
    team.webhook_secret = secret_generate()
    team.save(update_fields=["webhook_secret"])
    logger.info("webhook secret of team %s rotated by %s", team.slug, user)
    return team
