"""Who may do what. The one place that turns a user into a role and a set of visible teams."""
from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group
from django.db.models import BigIntegerField, CharField, Value

from .choices import Role
from .models import Membership

ROLE_ORDER = (Role.PLATFORM, Role.FINANCE, Role.ENGINEER)


def user_roles(user: AbstractBaseUser | AnonymousUser) -> set[str]:
    if not user.is_authenticated:
        return set()
    cached = getattr(user, "_portal_roles", None)
    if cached is None:
        _load_roles_and_teams(user)
        cached = user._portal_roles
    return cached


def _load_roles_and_teams(user) -> None:
    """The user's roles and the ids of their teams, in one round trip (a UNION): most API requests need both, who
    the caller is and which teams' rows they see. Both are kept on the user object for the request; the team ids
    are what portal.selectors.team_visible_ids answers for an engineer."""
    groups = Group.objects.filter(user=user).annotate(team=Value(None, output_field=BigIntegerField()))
    teams = Membership.objects.filter(user=user).annotate(role=Value(None, output_field=CharField()))
    roles, team_ids = set(), set()
    for role, team_id in groups.values_list("name", "team").union(teams.values_list("role", "team_id"), all=True):
        if role is None:
            team_ids.add(team_id)
        else:
            roles.add(role)
    roles &= set(Role.values)
    if user.is_superuser:
        roles.add(Role.PLATFORM)
    user._portal_roles, user._portal_team_ids = roles, team_ids


def primary_role(user) -> str | None:
    roles = user_roles(user)
    return next((role.value for role in ROLE_ORDER if role in roles), None)


def is_platform(user) -> bool:
    return Role.PLATFORM in user_roles(user)


def is_finance(user) -> bool:
    return Role.FINANCE in user_roles(user)


def sees_all_teams(user) -> bool:
    """Platform and finance read across teams; engineers see only their own teams."""
    return bool(user_roles(user) & {Role.PLATFORM, Role.FINANCE})
