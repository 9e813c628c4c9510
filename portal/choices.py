from django.db import models


class Role(models.TextChoices):
    """The three personas. Each is a Django group of the same name."""

    ENGINEER = "engineer", "ML engineer"
    PLATFORM = "platform", "Platform team"
    FINANCE = "finance", "Finance"
