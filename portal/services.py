"""Writes for teams, people and roles. Idempotent, so bootstrap scripts can run them again."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from rest_framework.authtoken.models import Token

from .choices import Role
from .models import Membership, Team


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
