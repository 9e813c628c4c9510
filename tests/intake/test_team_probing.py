"""Asking for a team one is not in and for a team that does not exist get the same answer, so the API cannot be
used to list the teams' slugs."""
import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url,extra", [("/api/v1/intake/preview/", {}), ("/api/v1/requests/", {"name": "probe"})])
def test_a_team_one_is_not_in_and_an_unknown_team_answer_alike(api, inventory, engineer, team_b, valid_answers,
                                                                url, extra):
    client = api(engineer)

    def ask(slug):
        response = client.post(url, {"team": slug, "answers": valid_answers, **extra})
        return response.status_code, response.json()["detail"].replace(slug, "<team>")

    existing, unknown = ask("team-b"), ask("team-zz")
    assert existing == unknown
    assert existing[0] == 403
    assert client.post(url, {"team": "team-a", "answers": valid_answers, **extra}).status_code in (200, 201)
