from rest_framework import serializers

from portal.roles import primary_role


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.SerializerMethodField()
    teams = serializers.SerializerMethodField()

    def get_role(self, user) -> str | None:
        return primary_role(user)

    def get_teams(self, user) -> list[str]:
        return sorted(m.team.slug for m in user.memberships.select_related("team"))
