"""The fake's own API machinery: selectors, merge patch, and server-side apply ownership."""
from __future__ import annotations

import pytest

from kubesim import apimachinery as am

NOW = "2026-01-01T00:00:00Z"


def obj(labels=None, **fields):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": labels or {}}, **fields}


@pytest.mark.parametrize("text", ["a in b", "a=b=c", "in (x)", "a notin"])
def test_bad_label_selectors_are_rejected(text):
    with pytest.raises(am.SelectorError):
        am.parse_label_selector(text)


def test_not_equal_and_notin_match_objects_without_the_label():
    requirements = am.parse_label_selector("a!=1,b notin (2)")

    assert am.labels_match(requirements, obj())
    assert not am.labels_match(requirements, obj({"a": "1"}))


def test_field_selector_supports_known_fields_only():
    pod = {"metadata": {"name": "p"}, "spec": {"nodeName": "gpu-1"}, "status": {"phase": "Running"}}

    assert am.fields_match(am.parse_field_selector("spec.nodeName=gpu-1,status.phase!=Failed", "pods"), pod)
    with pytest.raises(am.SelectorError, match="not supported"):
        am.parse_field_selector("spec.nodeName=gpu-1", "configmaps")


def test_merge_patch_merges_dicts_deletes_nulls_and_replaces_lists():
    target = {"a": {"b": 1, "c": 2}, "l": [1, 2]}

    assert am.merge_patch(target, {"a": {"b": None, "d": 3}, "l": [3]}) == {"a": {"c": 2, "d": 3}, "l": [3]}


def test_fields_v1_round_trip_excludes_server_fields():
    paths = am.leaf_paths(obj({"x": "1"}, data={"k": "v"}, spec={"list": [1], "empty": {}}))

    assert paths == {("metadata", "labels", "x"), ("data", "k"), ("spec", "list"), ("spec", "empty")}
    assert am.from_fields_v1(am.to_fields_v1(paths)) == paths


def test_apply_removes_fields_the_manager_stopped_setting():
    first = am.server_side_apply(None, obj(data={"a": "1", "b": "2"}), "me", False, NOW)

    second = am.server_side_apply(first, obj(data={"a": "1"}), "me", False, NOW)

    assert second["data"] == {"a": "1"}


def test_apply_keeps_a_dropped_field_another_manager_also_owns():
    first = am.server_side_apply(None, obj(data={"a": "1", "b": "2"}), "me", False, NOW)
    shared = am.server_side_apply(first, obj(data={"b": "2"}), "other", False, NOW)

    second = am.server_side_apply(shared, obj(data={"a": "1"}), "me", False, NOW)

    assert second["data"] == {"a": "1", "b": "2"}


def test_apply_with_the_same_value_as_another_manager_is_not_a_conflict():
    first = am.server_side_apply(None, obj(data={"a": "1"}), "other", False, NOW)

    assert am.server_side_apply(first, obj(data={"a": "1"}), "me", False, NOW)["data"] == {"a": "1"}


def test_unchanged_apply_differs_only_in_timestamps():
    first = am.server_side_apply(None, obj(data={"a": "1"}), "me", False, NOW)

    second = am.server_side_apply(first, obj(data={"a": "1"}), "me", False, "2027-01-01T00:00:00Z")

    assert am.without_times(second) == am.without_times(first)
