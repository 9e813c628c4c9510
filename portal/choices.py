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
