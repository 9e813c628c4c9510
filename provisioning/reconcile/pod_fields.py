"""The fields of a Pod that `facts.pod_fact` reads, as a schema (TypedDicts) that a LIST page is decoded against:
the keys named here are decoded, every other key of the API server's answer (managedFields, most of the spec,
volumes, env, tolerations, ...) is skipped by the decoder without becoming a Python object. A pod is some 5 KB of
JSON; its facts need a fifth of it. Pure: no Django, no I/O.

Leaves are `Any` (the schema chooses what is read, `pod_fact` checks what it reads), and every level may be null
or absent, so a server that writes a null or leaves a field out is read as `pod_fact` reads a full decode.
tests/provisioning/reconcile/test_pod_fields.py checks that pods decoded against this schema give the same facts
as pods decoded whole, over every pod shape the tests build: a field `pod_fact` starts reading must be added here.
"""
from __future__ import annotations

from typing import Any, TypedDict


class _Named(TypedDict, total=False):
    name: Any


class _Container(TypedDict, total=False):
    name: Any
    image: Any


class _Spec(TypedDict, total=False):
    nodeName: Any
    schedulingGates: list[_Named] | None
    containers: list[_Container] | None
    initContainers: list[_Container] | None
    priority: Any
    priorityClassName: Any
    terminationGracePeriodSeconds: Any


class _Metadata(TypedDict, total=False):
    name: Any
    namespace: Any
    uid: Any
    resourceVersion: Any
    creationTimestamp: Any
    deletionTimestamp: Any
    labels: dict[str, Any] | None
    annotations: dict[str, Any] | None


class _Condition(TypedDict, total=False):
    type: Any
    status: Any
    reason: Any
    message: Any
    lastTransitionTime: Any


class _Terminated(TypedDict, total=False):
    reason: Any
    exitCode: Any
    message: Any
    signal: Any
    startedAt: Any
    finishedAt: Any


class _Waiting(TypedDict, total=False):
    reason: Any
    message: Any


class _Running(TypedDict, total=False):
    startedAt: Any


class _State(TypedDict, total=False):
    waiting: _Waiting | None
    running: _Running | None
    terminated: _Terminated | None


class _LastState(TypedDict, total=False):
    terminated: _Terminated | None


class _ContainerStatus(TypedDict, total=False):
    name: Any
    image: Any
    ready: Any
    restartCount: Any
    state: _State | None
    lastState: _LastState | None


class _Status(TypedDict, total=False):
    phase: Any
    reason: Any
    message: Any
    startTime: Any
    nominatedNodeName: Any
    conditions: list[_Condition] | None
    containerStatuses: list[_ContainerStatus] | None
    initContainerStatuses: list[_ContainerStatus] | None


class PodFields(TypedDict, total=False):
    """One pod, as much of it as the status rules read."""

    metadata: _Metadata | None
    spec: _Spec | None
    status: _Status | None
