"""factory_boy factories and small builders for the portal's models."""
import factory

from portal.models import Team
from portal.services import token_issue, user_upsert


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"team-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.replace("-", " ").title())
    cost_center = factory.Sequence(lambda n: f"CC-{1000 + n}")


def make_user(username: str, role: str, *teams: Team, password: str = "pw-for-tests-1"):
    """A user with one role and team memberships, issued an API token; `user.api_token` keeps its clear value
    (which the database does not) for tests to authenticate with."""
    user, _ = user_upsert(username=username, role=role, team_slugs=[t.slug for t in teams], password=password)
    _, user.api_token = token_issue(user=user, name="tests", replace=True)
    return user
