from django.db import models


class Role(models.TextChoices):
    """The three personas. Each is a Django group of the same name."""

    ENGINEER = "engineer", "ML engineer"
    PLATFORM = "platform", "Platform team"
    FINANCE = "finance", "Finance"


class NoticeChannel(models.TextChoices):
    EMAIL = "email", "E-mail"
    WEBHOOK = "webhook", "Webhook"


class NoticeStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RETRYING = "retrying", "Waiting to retry"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"


class SignOnLink(models.TextChoices):
    """How a single sign-on identity came to be linked to its portal user."""

    FIRST_SIGN_ON = "first_sign_on", "Account made at its first sign-on"
    VERIFIED_EMAIL = "verified_email", "Existing account with the provider's verified e-mail"
    COMMAND = "command", "Linked by the platform team (manage.py link_sign_on)"
