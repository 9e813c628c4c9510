"""Teams and membership. Roles are Django groups named after `portal.choices.Role`."""
from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

slug_validator = RegexValidator(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
    "Use lower-case letters, digits and '-', starting and ending with a letter or digit (a DNS-1123 label).",
)


class Team(models.Model):
    slug = models.CharField(max_length=40, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=200)
    cost_center = models.CharField(max_length=64, blank=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="teams")
    notification_email = models.EmailField(blank=True, help_text="Where stalled-gang and failure notices go.")
    webhook_url = models.URLField(blank=True, help_text="Optional webhook called on stalled gangs and failures.")

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "team"], name="%(app_label)s_%(class)s_unique_user_team"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team}"


class ApiToken(models.Model):
    """An API token of a user. Only the SHA-256 digest of the secret is stored: the secret itself is shown once,
    when the token is issued (portal.services.token_issue), and cannot be read back."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. a script or a CI job.")
    prefix = models.CharField(max_length=12, help_text="The first characters of the token, to recognise it.")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: never expires.")
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["user_id", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "name"], condition=models.Q(revoked_at__isnull=True),
                name="%(app_label)s_%(class)s_unique_active_name",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def is_usable(self, now) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)
