"""k8s_name and friends: valid DNS-1123 labels for any input, deterministic, and injective when they shorten."""

from __future__ import annotations

import pytest

from provisioning.manifests.names import (
    BASE_NAME_MAX,
    DNS_1035_LABEL,
    DNS_1123_LABEL,
    LABEL_VALUE,
    child_name,
    k8s_name,
    label_value,
    request_base_name,
    service_name,
    team_namespace,
)

NASTY = [
    "",
    "-",
    "---",
    "Hello World",
    "ÜBER-gpu_Team",
    "a" * 200,
    "team.with.dots",
    "UPPER",
    "__init__",
    "-leading-and-trailing-",
    "emoji 🚀 rocket",
    "tab\tnewline\n",
    "7b-llama",
    "x" * 63,
    "a--b",
]


@pytest.mark.parametrize("raw", NASTY)
def test_given_any_input_when_slugged_then_it_is_a_dns_1123_label(raw):
    name = k8s_name(raw)
    assert DNS_1123_LABEL.match(name) and len(name) <= 63, repr(name)


@pytest.mark.parametrize("raw", NASTY)
def test_given_any_input_when_slugged_for_a_service_then_it_starts_with_a_letter(raw):
    name = service_name(raw)
    assert DNS_1035_LABEL.match(name) and len(name) <= 63, repr(name)


@pytest.mark.parametrize("max_length", [10, 20, 47, 63])
def test_given_a_max_length_then_the_name_respects_it(max_length):
    assert len(k8s_name("a" * 500, "b" * 500, max_length=max_length)) <= max_length


def test_given_a_clean_name_then_it_is_kept_readable():
    assert k8s_name("gpu", "ml-research") == "gpu-ml-research"
    assert team_namespace("ml-research") == "gpu-ml-research"
    assert request_base_name("llama-serve", 42) == "llama-serve-r42"
    assert child_name("llama-serve-r42", "gpu") == "llama-serve-r42-gpu"


def test_same_input_gives_the_same_name():
    assert k8s_name("Some Team", "x" * 100) == k8s_name("Some Team", "x" * 100)


def test_long_names_differing_only_at_the_end_do_not_collide():
    names = {k8s_name("a" * 80 + suffix) for suffix in ("1", "2", "3", "x", "y")}
    assert len(names) == 5
    bases = {request_base_name("n" * 100 + str(i), 7) for i in range(50)}
    assert len(bases) == 50


def test_inputs_that_sanitise_to_the_same_text_do_not_collide():
    # Two teams "ml_research" and "ml-research" must never share a namespace.
    assert team_namespace("ml_research") != team_namespace("ml-research")
    assert k8s_name("ML") != k8s_name("ml")
    # Parts are joined with '-', so ("a", "b") and ("a-b",) are the same name on purpose.
    assert k8s_name("a", "b") == k8s_name("a-b") == "a-b"


def test_request_base_name_keeps_the_request_id_visible_and_leaves_room_for_children():
    base = request_base_name("x" * 300, 123456)
    assert base.endswith("-r123456") and len(base) <= BASE_NAME_MAX
    # Indexed Job hostnames are <job>-<index>; children add a suffix; both must stay DNS labels.
    assert len(f"{base}-9999") <= 63
    assert DNS_1123_LABEL.match(child_name(base, "workers"))


@pytest.mark.parametrize("raw", NASTY + ["CC 1234/ML", "Cost.Centre_42", "1234"])
def test_label_value_is_always_valid(raw):
    value = label_value(raw)
    assert LABEL_VALUE.match(value) and len(value) <= 63, repr(value)


def test_label_value_keeps_valid_values_and_separates_altered_ones():
    assert label_value("CC-4711") == "CC-4711"
    assert label_value("CC 4711") != label_value("CC/4711")
