"""The decision's inputs (the active policy version, its rules as a PolicySpec, the inventory snapshot), cached per
process and keyed by cheap version stamps read in one query: the active version's id, number and activation time,
and the inventory generation (provisioning.models.InventoryGeneration, bumped by database triggers in every
transaction that writes clusters, pools or GPU models). A change committed elsewhere changes the stamps, so the
next caller reloads; nothing is cached under stamps that moved while it was being loaded, so a cached entry is
never half of one state and half of another."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django.db import connection

from portal.errors import NotFound

from .choices import PolicyStatus
from .decisions import Inventory, PolicySpec
from .hooks import ScalarSql, inventory_generation, inventory_snapshot
from .models import PolicyVersion
from .selectors import policy_current, policy_spec

# Reloads tried when the stamps keep moving during a load (a burst of syncs); then the last load is used uncached.
LOAD_ATTEMPTS = 3


@dataclass(frozen=True)
class DecisionInputs:
    stamps: tuple
    policy_version: PolicyVersion
    policy: PolicySpec
    inventory: Inventory


# One entry: the inputs of the newest stamps seen. Rebinding a module global is atomic, so threads need no lock.
_cached: DecisionInputs | None = None


def decision_input_stamps(read_beside: Mapping[str, ScalarSql] | None = None) -> tuple[tuple, dict]:
    """(policy version id, number, activated_at, inventory generation), in one round trip, with the values of
    `read_beside` (what the decision gates read first, intake.hooks.decision_gate_reads) by name. A policy version's
    rules cannot change once it is active (only drafts are edited), so the version's identity stamps them; the
    activation time tells apart two activations of one version when one of them rolled back. In SQL, as the values
    read beside it are (intake.hooks.ScalarSql): this query runs for every create and preview."""
    read_beside = read_beside or {}
    values = [inventory_generation(), *read_beside.values()]
    quote = connection.ops.quote_name
    sql = (f"SELECT version.{quote('id')}, version.{quote('number')}, version.{quote('activated_at')}, "
           + ", ".join(f"({value.sql})" for value in values)
           + f" FROM {quote(PolicyVersion._meta.db_table)} AS version WHERE version.{quote('status')} = %s "
           f"ORDER BY version.{quote('id')} LIMIT 1")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*(p for value in values for p in value.params), PolicyStatus.ACTIVE.value])
        row = cursor.fetchone()
    if row is None:
        raise NotFound("No routing policy is active; the platform team must sign one off.")
    return tuple(row[:4]), dict(zip(read_beside, row[4:]))


def decision_inputs() -> DecisionInputs:
    """The inputs the decision is made from now: from this process's cache when the stamps still match, else
    loaded (and cached if nothing changed while loading)."""
    return decision_inputs_reading({})[0]


def decision_inputs_reading(read_beside: Mapping[str, ScalarSql]) -> tuple[DecisionInputs, dict]:
    """`decision_inputs()`, and the values of `read_beside` read in the same query as the stamps."""
    global _cached
    stamps, read = decision_input_stamps(read_beside)
    cached = _cached
    if cached is not None and cached.stamps == stamps:
        return cached, read
    for _ in range(LOAD_ATTEMPTS):
        version = policy_current()
        loaded = DecisionInputs(stamps=stamps, policy_version=version, policy=policy_spec(version),
                                inventory=inventory_snapshot())
        # READ COMMITTED: each query above saw what was committed when it ran. Unchanged stamps after them mean no
        # inventory or policy change committed in between (a generation is never reused), so they saw one state.
        after = decision_input_stamps()[0]
        if after == stamps and version.pk == stamps[0]:
            _cached = loaded
            return loaded, read
        stamps = after
    return loaded, read

