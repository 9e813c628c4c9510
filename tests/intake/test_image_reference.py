"""Image references follow the OCI distribution reference grammar, in ASCII (red-team issue 16, item 10): Unicode
tags, ports outside 1-65535 and upper-case repositories are refused with a 400 naming `answers.image` on the API
and an error on the image field of the web form; nothing is stored."""
import pytest
from django.test import Client

from intake.image_reference import IMAGE_REFERENCE_RE, image_reference_error
from intake.models import GpuRequest
from intake.questionnaire import json_schema
from tests.conftest import VALID_ANSWERS

REFUSED = {
    "pytorch:ｌａｔｅｓｔ": "ASCII",  # full-width letters: Python's \w matched them, Go's does not
    "nginx:١٢٣": "ASCII",  # Arabic-Indic digits
    "localhost:99999/x": "between 1 and 65535",
    "registry.example.com:0/team/app": "between 1 and 65535",
    "nvcr.io:05000/nvidia/pytorch": "between 1 and 65535",
    "NVIDIA/pytorch:25.01": "lower-case",  # not a registry host called NVIDIA: an upper-case repository
    "nvcr.io/NVIDIA/pytorch:25.01": "lower-case",
    "Nginx": "lower-case",
    "nginx@sha256:" + "A" * 64: "lower-case hex",
    "nginx@md5:" + "a" * 32: "sha256",
    "a" * 64: "image id",
    "nginx:" + "a" * 129: "image reference such as",
    "nginx:-latest": "image reference such as",
    "nginx:": "image reference such as",
    "library//nginx": "image reference such as",
    "x/" + "a" * 300: "at most 255",
    "[::1]:5000/app:dev": "image reference such as",  # no IPv6 literals (see intake/image_reference.py)
}
ACCEPTED = [
    "nvcr.io/nvidia/pytorch:25.01-py3",
    "nginx",
    "ubuntu:24.04",
    "localhost/app",
    "localhost:5000/team/app:v1",
    "registry.example.com:65535/a/b__c/d--e:1.0_rc-2",
    "127.0.0.1:5000/app",
    "my-registry:443/app",
    "Registry.Example.com/app",  # host names are case-insensitive; repositories are not
    "nginx:1.27@sha256:" + "0123456789abcdef" * 4,
    "app@sha512:" + "f" * 128,
]


@pytest.mark.parametrize("value,reason", sorted(REFUSED.items()))
def test_references_outside_the_grammar_are_refused_saying_why(value, reason):
    error = image_reference_error(value)
    assert error is not None and reason in error
    if reason not in ("image id", "at most 255"):  # the two rules the pattern alone does not carry
        assert not IMAGE_REFERENCE_RE.fullmatch(value)


@pytest.mark.parametrize("value", ACCEPTED)
def test_references_in_the_grammar_are_accepted(value):
    assert image_reference_error(value) is None and IMAGE_REFERENCE_RE.fullmatch(value)


def test_the_json_schema_carries_the_same_ascii_pattern():
    pattern = json_schema()["properties"]["image"]["pattern"]
    assert pattern == IMAGE_REFERENCE_RE.pattern and "\\w" not in pattern


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/requests/", "/api/v1/intake/preview/"])
@pytest.mark.parametrize("image", ["pytorch:ｌａｔｅｓｔ", "nginx:١٢٣", "localhost:99999/x", "NVIDIA/pytorch:1"])
def test_the_api_refuses_them_naming_answers_image(api, engineer, team_a, inventory, path, image):
    body = {"team": "team-a", "name": "img", "answers": {**VALID_ANSWERS, "image": image}}
    response = api(engineer).post(path, body, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["answers"] and list(response.json()["answers"]) == ["image"]
    assert GpuRequest.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize("image", ["pytorch:ｌａｔｅｓｔ", "localhost:99999/x", "NVIDIA/pytorch:1"])
def test_the_web_form_shows_the_error_on_the_image_field(engineer, team_a, inventory, image):
    client = Client()
    client.force_login(engineer)
    form = {"name": "img", **{key: str(value) for key, value in VALID_ANSWERS.items()}}
    response = client.post("/requests/new/", {**form, "team": team_a.pk, "image": image})
    assert response.status_code == 200
    assert list(response.context["form"].errors) == ["image"]
    assert GpuRequest.objects.count() == 0
