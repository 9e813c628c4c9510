"""Writes for teams, people and roles. Idempotent, so bootstrap scripts can run them again."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import check_password
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from .choices import Role, SignOnLink
from .dispatch import send_on_commit
from .errors import InvalidInput, NotFound, PermissionDenied
from .models import ApiToken, Membership, SignOnIdentity, Team
from .roles import is_platform, user_roles
from .tokens import token_digest, token_generate, token_prefix
from .webhooks import secret_generate

logger = logging.getLogger(__name__)


@transaction.atomic
def team_upsert(*, slug: str, name: str, cost_center: str | None = None,
                notification_email: str | None = None) -> tuple[Team, bool]:
    """Create the team, or update its name (and cost centre and notification address when given). Returns
    (team, created)."""
    team = Team(slug=slug, name=name, cost_center=cost_center or "", notification_email=notification_email or "")
    team.full_clean(validate_unique=False)
    defaults = {"name": name}
    if cost_center is not None:
        defaults["cost_center"] = cost_center
    if notification_email is not None:
        defaults["notification_email"] = notification_email
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
    keep_tokens: bool = False,
) -> tuple[object, bool]:
    """Create or update a portal user with exactly one role and the given team memberships. Returns (user, created).

    Memberships are added, never removed, so running a bootstrap script twice is harmless. A new password revokes
    the user's API tokens unless `keep_tokens`.
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
        user._keep_api_tokens = keep_tokens
    elif created:
        user.set_unusable_password()
    user.save()

    groups = role_groups_ensure()
    user.groups.remove(*[group for name, group in groups.items() if name != role])
    user.groups.add(groups[role])
    for team in teams:
        Membership.objects.get_or_create(user=user, team=team)
    return user, created


# --- API tokens (portal.tokens; only digests are stored) -----------------------------------------------------------


@transaction.atomic
def token_issue(*, user, name: str, expires_at=None, replace: bool = False) -> tuple[ApiToken, str]:
    """Issue a token named `name` to `user`. Returns (token, the clear secret): the only time it can be seen.

    A user's active tokens have distinct names; with `replace` an active token of the same name is revoked first
    (bootstrap scripts rotate their token by running again), otherwise the name is refused.
    """
    name = (name or "").strip()
    if not name:
        raise InvalidInput("Give the token a name that says what it is for.", field="name")
    # The user's row lock: two issues at once cannot both pass the cap below.
    get_user_model().objects.select_for_update(no_key=True).filter(pk=user.pk).first()
    if expires_at is not None and expires_at <= timezone.now():
        raise InvalidInput("The expiry must be in the future (or empty for a token that does not expire).",
                           field="expires_at")
    if replace:
        ApiToken.objects.filter(user=user, name=name, revoked_at__isnull=True).update(revoked_at=timezone.now())
    live = (ApiToken.objects.filter(user=user, revoked_at__isnull=True)
            .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())).count())
    if live >= settings.PORTAL_MAX_TOKENS_PER_USER:
        raise InvalidInput(f"You already hold {live} working tokens, the most one person may: revoke one you no "
                           "longer use first.", field="name")
    clear = token_generate()
    try:
        with transaction.atomic():
            token = ApiToken.objects.create(user=user, name=name, prefix=token_prefix(clear),
                                            digest=token_digest(clear), expires_at=expires_at)
    except IntegrityError:  # the partial unique constraint: an active token already has this name
        raise InvalidInput(f"You already have a token named {name!r}: pick another name or revoke that one.",
                           field="name") from None
    logger.info("API token %s (%s) issued to %s", token.pk, token.prefix, user.username)
    return token, clear


@transaction.atomic
def tokens_revoke_selected(*, actor, token_ids) -> int:
    """The admin's bulk revoke: anyone's tokens, so the platform team's alone. Returns how many were revoked."""
    if not is_platform(actor):
        raise PermissionDenied("Only the platform team revokes other people's tokens.")
    return sum(token_revoke(actor=actor, token_id=token_id).revoked_at is not None for token_id in token_ids)


@transaction.atomic
def token_revoke(*, actor, token_id: int) -> ApiToken:
    """Revoke one token: its owner may, and the platform team (whose admin calls this too). Revoking twice is
    harmless; another user's token is not found, as if it did not exist."""
    tokens = ApiToken.objects.select_for_update()
    if not is_platform(actor):
        tokens = tokens.filter(user=actor)
    token = tokens.filter(pk=token_id).first()
    if token is None:
        raise NotFound("No such token.")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        logger.info("API token %s (%s) of %s revoked by %s", token.pk, token.prefix, token.user_id, actor.username)
    return token


def tokens_revoke_all(*, user) -> int:
    """Revoke every active token of `user` (a new password does, see token_guard_password_change)."""
    return ApiToken.objects.filter(user=user, revoked_at__isnull=True).update(revoked_at=timezone.now())


def token_authenticate(*, clear: str) -> ApiToken | None:
    """The usable token with this secret, its last use recorded; None when unknown, revoked or expired.

    The last use is written at most once a minute (rows are not rewritten on every request), by one conditional
    UPDATE every time, so a request costs the same number of queries whether or not it writes.
    """
    now = timezone.now()
    token = (ApiToken.objects.select_related("user").filter(digest=token_digest(clear), revoked_at__isnull=True)
             .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now)).first())
    if token is None:
        return None
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - timedelta(minutes=1))
    if ApiToken.objects.filter(stale, pk=token.pk).update(last_used_at=now):
        token.last_used_at = now
    return token


def token_guard_password_change(sender, instance, update_fields=None, **kwargs) -> None:
    """pre_save of the user model: a changed password revokes the user's tokens, whoever changed it (the admin's
    password form, `changepassword`, user_upsert), unless the caller set `_keep_api_tokens` on the user.

    A signal, because Django's own password paths call no service of ours; the revocation must not depend on
    every such path remembering it.
    """
    keep = instance.__dict__.pop("_keep_api_tokens", False)  # asked for this one save only
    if keep or instance.pk is None or (update_fields is not None and "password" not in update_fields):
        return
    stored = type(instance).objects.filter(pk=instance.pk).values_list("password", flat=True).first()
    if stored is None or stored == instance.password:
        return
    # set_password keeps the raw value until the save: setting the same password again is no change.
    raw = getattr(instance, "_password", None)
    if raw is None or not check_password(raw, stored):
        revoked = tokens_revoke_all(user=instance)
        if revoked:
            logger.info("password of %s changed: %d API token(s) revoked", instance.get_username(), revoked)


# --- worker heartbeat (portal.tasks.ping) -------------------------------------------------------------------------

WORKER_HEARTBEAT_CACHE_KEY = "ops:worker-heartbeat"


def worker_heartbeat_record(*, worker: str, task_id: str, request_id: str) -> dict:
    """Remember the last ping a worker ran. Kept in the shared cache (Redis): every process sees it."""
    heartbeat = {"worker": worker, "at": timezone.now().isoformat(), "task_id": task_id, "request_id": request_id}
    cache.set(WORKER_HEARTBEAT_CACHE_KEY, heartbeat, timeout=None)
    return heartbeat


def worker_ping_dispatch(*, user) -> None:
    """Send a `portal.ping` task (after commit); its heartbeat carries the caller's request id."""
    if not is_platform(user):
        raise PermissionDenied("Only the platform team pings the workers.")
    send_on_commit("portal.ping", what="a worker ping")


# --- single sign-on (portal.oidc) ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SignOn:
    """Who the identity provider vouched for (portal.oidc.identity_from_claims): the link key (issuer, subject)
    and what the portal takes from its claims."""

    issuer: str
    subject: str
    username: str
    role: str
    team_slugs: tuple[str, ...] = ()
    email: str = ""  # kept unless the provider says it is unverified
    email_verified: bool = False  # the provider said so in so many words (links by e-mail need it)
    first_name: str = ""
    last_name: str = ""


@transaction.atomic
def user_sign_on(*, sign_on: SignOn, link_verified_email: bool = False):
    """The portal user of this identity, its role and teams set from the provider's groups alone.

    The user is found by the identity's issuer and subject only. An identity seen for the first time gets an
    account of its own, named after its user name claim, or `<name>@<issuer host>` when that name is taken: a
    name the provider lets people choose never adopts an existing account. With `link_verified_email` it is
    linked instead to the one existing account with the provider's verified e-mail address (never a superuser,
    never an account already linked at this issuer). Teams are never created here (a team carries a cost centre
    the platform team sets): groups of unknown teams are ignored. A local password, if the account has one, keeps
    working. Raises PermissionDenied with the reason when there is no account it may have.
    """
    link = (SignOnIdentity.objects.select_for_update().select_related("user")
            .filter(issuer=sign_on.issuer, subject=sign_on.subject).first())
    if link is not None:
        user = link.user
        if not user.is_active:
            raise PermissionDenied("Your portal account is deactivated; ask the platform team.")
    else:
        user, how = _sign_on_account(sign_on, link_verified_email=link_verified_email)
        SignOnIdentity.objects.create(user=user, issuer=sign_on.issuer, subject=sign_on.subject, linked_by=how)
        logger.info("SSO identity %s at %s linked to %s (%s)", sign_on.subject, sign_on.issuer, user.username, how)
    known = sorted(Team.objects.filter(slug__in=sign_on.team_slugs).values_list("slug", flat=True))
    user, _ = user_upsert(username=user.username, role=sign_on.role, team_slugs=known, email=sign_on.email)
    Membership.objects.filter(user=user).exclude(team__slug__in=known).delete()
    if (user.first_name, user.last_name) != (sign_on.first_name, sign_on.last_name):
        user.first_name, user.last_name = sign_on.first_name, sign_on.last_name
        user.save(update_fields=["first_name", "last_name"])
    if unknown := sorted(set(sign_on.team_slugs) - set(known)):
        logger.info("SSO user %s is in groups of unknown teams (%s): ignored until the platform team creates them",
                    user.username, ", ".join(unknown))
    return user


def _sign_on_account(sign_on: SignOn, *, link_verified_email: bool):
    """(user, how it is linked) for an identity seen for the first time."""
    users = get_user_model().objects
    if link_verified_email and sign_on.email and sign_on.email_verified:
        same_email = list(users.filter(email__iexact=sign_on.email)
                          .exclude(sign_on_identities__issuer=sign_on.issuer)[:2])
        if len(same_email) > 1:
            raise PermissionDenied(f"Several portal accounts have the e-mail address {sign_on.email}: ask the "
                                   "platform team to link yours (manage.py link_sign_on).")
        if same_email and same_email[0].is_superuser:
            raise PermissionDenied("The portal account with your e-mail address is an administrator's: it is not "
                                   "linked to a sign-on by e-mail. Ask the platform team (manage.py link_sign_on).")
        if same_email:
            return same_email[0], SignOnLink.VERIFIED_EMAIL
    host = urlsplit(sign_on.issuer).hostname or "sso"
    for username in (sign_on.username, f"{sign_on.username}@{host}"):
        # Compared without case: "Pat" beside a local "pat" would be a look-alike of another person's account.
        if len(username) <= 150 and not users.filter(username__iexact=username).exists():
            user = users.create(username=username)
            user.set_unusable_password()
            user.save(update_fields=["password"])
            return user, SignOnLink.FIRST_SIGN_ON
    raise PermissionDenied(f"The portal already has accounts named {sign_on.username!r} and "
                           f"{sign_on.username}@{host}, neither linked to your sign-on: ask the platform team.")


@transaction.atomic
def sign_on_link(*, username: str, issuer: str, subject: str):
    """Link an identity to an existing account (the platform team's `manage.py link_sign_on`), replacing the
    account's link at that issuer. Raises InvalidInput when the account does not exist or the identity is another's.
    """
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise InvalidInput(f"No portal account is named {username!r}.", field="username")
    taken = SignOnIdentity.objects.filter(issuer=issuer, subject=subject).exclude(user=user).first()
    if taken is not None:
        raise InvalidInput(f"That identity is linked to {taken.user.username}; unlink it there first (admin, "
                           "single sign-on identities).", field="subject")
    SignOnIdentity.objects.filter(user=user, issuer=issuer).delete()
    return SignOnIdentity.objects.create(user=user, issuer=issuer, subject=subject, linked_by=SignOnLink.COMMAND)


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
