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
