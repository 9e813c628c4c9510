from django.utils import timezone
from rest_framework import serializers

from portal.models import ApiToken
from portal.roles import primary_role


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.SerializerMethodField()
    teams = serializers.SerializerMethodField()

    def get_role(self, user) -> str | None:
        return primary_role(user)

    def get_teams(self, user) -> list[str]:
        return sorted(m.team.slug for m in user.memberships.select_related("team"))


class ApiTokenSerializer(serializers.ModelSerializer):
    active = serializers.SerializerMethodField(help_text="Neither revoked nor expired")

    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "created_at", "expires_at", "last_used_at", "revoked_at", "active"]
        read_only_fields = fields

    def get_active(self, token) -> bool:
        return token.is_usable(timezone.now())


class ApiTokenIssuedSerializer(ApiTokenSerializer):
    """A token just issued, with its secret (set by the view as `secret`; the database has only its digest)."""

    token = serializers.CharField(source="secret",
                                  help_text="The secret, for `Authorization: Token <token>`. Shown only this once.")

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "token"]
        read_only_fields = fields


class ApiTokenCreateInputSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, help_text="What the token is for, e.g. a script or a CI job")
    expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None,
                                           help_text="When the token stops working; empty: never")
