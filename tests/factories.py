"""factory_boy factories and small builders for the portal's models."""
import factory

from portal.models import Team
from portal.services import user_upsert


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"team-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.replace("-", " ").title())
    cost_center = factory.Sequence(lambda n: f"CC-{1000 + n}")


def make_user(username: str, role: str, *teams: Team, password: str = "pw-for-tests-1"):
    """A user with one role and team memberships; `user.api_token` carries the API token key."""
    user, token, _ = user_upsert(username=username, role=role, team_slugs=[t.slug for t in teams], password=password)
    user.api_token = token.key
    return user
