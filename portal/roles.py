"""Who may do what. The one place that turns a user into a role and a set of visible teams."""
from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from .choices import Role

ROLE_ORDER = (Role.PLATFORM, Role.FINANCE, Role.ENGINEER)


def user_roles(user: AbstractBaseUser | AnonymousUser) -> set[str]:
    if not user.is_authenticated:
        return set()
    cached = getattr(user, "_portal_roles", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True)) & set(Role.values)
        if user.is_superuser:
            cached.add(Role.PLATFORM)
        user._portal_roles = cached
    return cached


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
