"""The cycle's chunk writer: writes run in order, in a thread of their own when pipelined (the next chunk is
assessed meanwhile), in the caller's thread otherwise; a failed write stops the writing and is raised."""
from __future__ import annotations

import threading

import pytest

from provisioning.reconcile.cycle import ChunkWriter, CycleOutcome


@pytest.mark.parametrize("pipelined", [True, False])
def test_writes_run_in_order_in_their_own_thread_only_when_pipelined(pipelined):
    threads = []

    def write(n):
        threads.append(threading.current_thread())
        return CycleOutcome(events=n)

    with ChunkWriter(pipelined=pipelined) as writer:
        for n in range(5):
            writer.submit(lambda n=n: write(n))

    assert [o.events for o in writer.outcomes] == [0, 1, 2, 3, 4]
    assert all((t is threading.current_thread()) is not pipelined for t in threads)


def test_a_failed_write_stops_the_writing_and_is_raised():
    done = []

    def fail():
        raise RuntimeError("the database went away")

    with pytest.raises(RuntimeError, match="went away"):
        with ChunkWriter(pipelined=True) as writer:
            writer.submit(lambda: done.append(1) or CycleOutcome())
            writer.submit(fail)
            writer.submit(lambda: done.append(3) or CycleOutcome())
    assert done == [1]
