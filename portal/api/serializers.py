from rest_framework import serializers

from portal.roles import primary_role
from portal.webhooks import SIGNATURE_HEADER, SIGNATURE_VERSION


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.SerializerMethodField()
    teams = serializers.SerializerMethodField()

    def get_role(self, user) -> str | None:
        return primary_role(user)

    def get_teams(self, user) -> list[str]:
        return sorted(m.team.slug for m in user.memberships.select_related("team"))


class TeamWebhookSerializer(serializers.Serializer):
    team = serializers.CharField(source="slug")
    webhook_url = serializers.CharField()
    webhook_secret = serializers.CharField(help_text="HMAC-SHA256 key of the signature header; keep it secret")
    signature_header = serializers.SerializerMethodField()
    signature_format = serializers.SerializerMethodField()

    def get_signature_header(self, team) -> str:
        return SIGNATURE_HEADER

    def get_signature_format(self, team) -> str:
        return f"t=<unix seconds>,{SIGNATURE_VERSION}=<hex HMAC-SHA256(webhook_secret, t + '.' + raw body)>"


class TeamWebhookInputSerializer(serializers.Serializer):
    # Shape only: the URL itself (scheme, where it resolves) is checked by the service, on the same field.
    webhook_url = serializers.CharField(allow_blank=True, max_length=200, trim_whitespace=True)
