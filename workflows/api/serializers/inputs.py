"""What callers send: a team and answers (create, preview), a comment (approve, reject, cancel), lease hours."""
from __future__ import annotations

from rest_framework import serializers

from portal.api.fields import CharField, FloatField
from portal.models import Team, slug_validator

from intake.choices import RequestStatus
from ...services import request_rights_denied
from .answers import AnswersSerializer


class RequestTeamField(serializers.SlugRelatedField):
    """A team slug; an unknown one gets the same 403 as a team the caller is not in (intake.services)."""

    def to_internal_value(self, data):
        if isinstance(data, str) and data and "\x00" not in data:
            team = self.get_queryset().filter(slug=data).first()
            if team is None:
                raise request_rights_denied(data[:63])
            return team
        return super().to_internal_value(data)


class TeamAnswersInputSerializer(serializers.Serializer):
    team = RequestTeamField(slug_field="slug", queryset=Team.objects.all())
    answers = AnswersSerializer()


class RequestCreateInputSerializer(TeamAnswersInputSerializer):
    name = CharField(max_length=63, validators=[slug_validator])


class PreviewInputSerializer(TeamAnswersInputSerializer):
    name = CharField(max_length=63, validators=[slug_validator], required=False,
                                 help_text="optional; used to name the previewed objects")


class LeaseExtendInputSerializer(serializers.Serializer):
    hours = FloatField(min_value=0.01, max_value=8760,
                       help_text="hours added to the lease; the time left may not pass the policy maximum")


class CommentInputSerializer(serializers.Serializer):
    comment = CharField(required=False, allow_blank=True, max_length=4000, default="")
    expected_status = serializers.ChoiceField(
        choices=RequestStatus.choices, required=False,
        help_text="The status you saw. If the request is no longer in it (someone acted first), nothing changes "
                  "and the answer is 409. Omitted: any status the transition is allowed from.",
    )
