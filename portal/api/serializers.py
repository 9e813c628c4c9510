from django.utils import timezone
from rest_framework import serializers

from portal.api.fields import CharField

from portal.models import ApiToken
from portal.roles import primary_role
from portal.webhooks import SIGNATURE_HEADER, SIGNATURE_VERSION


class MeSerializer(serializers.Serializer):
    username = CharField()
    role = serializers.SerializerMethodField()
    teams = serializers.SerializerMethodField()

    def get_role(self, user) -> str | None:
        return primary_role(user)

    def get_teams(self, user) -> list[str]:
        return sorted(m.team.slug for m in user.memberships.select_related("team"))


class TeamWebhookSerializer(serializers.Serializer):
    team = CharField(source="slug")
    webhook_url = CharField()
    webhook_secret = CharField(help_text="HMAC-SHA256 key of the signature header; keep it secret")
    signature_header = serializers.SerializerMethodField()
    signature_format = serializers.SerializerMethodField()

    def get_signature_header(self, team) -> str:
        return SIGNATURE_HEADER

    def get_signature_format(self, team) -> str:
        return f"t=<unix seconds>,{SIGNATURE_VERSION}=<hex HMAC-SHA256(webhook_secret, t + '.' + raw body)>"


class TeamWebhookInputSerializer(serializers.Serializer):
    # Shape only: the URL itself (scheme, where it resolves) is checked by the service, on the same field.
    webhook_url = CharField(allow_blank=True, max_length=200, trim_whitespace=True)


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

    token = CharField(source="secret",
                                  help_text="The secret, for `Authorization: Token <token>`. Shown only this once.")

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "token"]
        read_only_fields = fields


class ApiTokenCreateInputSerializer(serializers.Serializer):
    # Not trimmed before the length check: the schema says 100 characters, so 101 are refused whatever they are.
    name = CharField(max_length=100, trim_whitespace=False,
                                 help_text="What the token is for, e.g. a script or a CI job")
    expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None,
                                           help_text="When the token stops working; empty: never")
