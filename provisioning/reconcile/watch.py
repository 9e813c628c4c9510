"""The reconciliation loop of one cluster (Celery beat), as a Kubernetes controller reads: LIST the portal's pods
a page at a time into a store of their facts (first run, every `PORTAL_RECONCILE_RELIST_SECONDS`, and after any
watch failure), or resume the watch from the resourceVersion where the last run stopped; reconcile; then WATCH for
a bounded time, reconciling the requests whose pods changed. A watch from a compacted resourceVersion (410 Gone)
and a LIST whose continue token expired midway both list again (kubernetes/client-go tools/cache/reflector.go).
A Redis lock per cluster keeps two workers from reconciling the same cluster at once."""
from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from gpu.vocabulary import KUEUE

from portal.dispatch import send_now

from ..choices import ReconcileStatus
from ..kube.client import KubeClient
from ..kube.connection import cluster_connection
from ..kube.errors import KubeError
from ..kube.reads import is_expired, pod_pages, watch_pods
from ..contract import MANAGED_BY, MANAGED_BY_KEY
from ..models import Cluster, ClusterReconcileState
from .cycle import CycleOutcome, status_reconcile_facts
from .preemptions import kueue_preemptions_record
from .pod_fields import PodFields
from .store import PodStore

logger = logging.getLogger(__name__)

POD_SELECTOR = f"{MANAGED_BY_KEY}={MANAGED_BY}"
# During a watch, the requests whose pods changed are reconciled at most this often (events come in bursts).
WATCH_FLUSH_SECONDS = 2.0
# A resumed watch first replays what happened since the last run; it is given this long (the API's unit) to do so.
CATCH_UP_SECONDS = 1


# Per worker process, per cluster id: the pods' facts from the last LIST and the watch events since. A run resumes
# from it only if the database says the last run of the cluster (by any worker) ended where this store ends;
# otherwise it lists again.
_POD_STORES: dict[int, PodStore] = {}
_STORES_LOCK = threading.Lock()
# How many times a LIST whose continue token expired midway (410) is started again before the run gives up.
LIST_ATTEMPTS = 3


@dataclass
class RunOutcome:
    cluster: str
    status: str
    message: str = ""
    listed: bool = False
    pods: int = 0
    requests: int = 0
    transitions: int = 0
    events: int = 0
    watch_events: int = 0
    cycles: int = 0

    def summary(self) -> str:
        if self.status != ReconcileStatus.OK:
            return f"{self.cluster}: {self.status} — {self.message}"
        how = "listed" if self.listed else "resumed the watch on"
        text = (f"{self.cluster}: {how} {self.pods} pods of {self.requests} active requests; {self.transitions} status "
                f"changes, {self.events} new events, {self.watch_events} watch events in {self.cycles} cycles")
        return text + (f" ({self.message})" if self.message else "")


def _lock(cluster: Cluster, ttl: float):
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    prefix = settings.CACHES["default"].get("KEY_PREFIX", "portal")
    return client.lock(f"{prefix}:reconcile:cluster:{cluster.pk}", timeout=ttl, blocking=False)


def _state_save(cluster: Cluster, **fields) -> ClusterReconcileState:
    state, _ = ClusterReconcileState.objects.update_or_create(cluster=cluster, defaults=fields)
    return state


def _list(kube: KubeClient) -> PodStore:
    """LIST the portal's pods a page at a time into a new store, keeping each pod only as its facts: a page is
    decoded as far as the facts read it (`PodFields`) and dropped before the next one is read. A continue token that expires midway (410: the list took longer
    than the server keeps its revision) starts the list again from the first page, as client-go's reflector lists
    again (tools/cache/reflector.go `list`), rather than falling back, as its pager can, to one unpaginated LIST
    (tools/pager/pager.go FullListIfExpired), which would hold the whole list at once."""
    for attempt in range(1, LIST_ATTEMPTS + 1):
        store = PodStore(label_domain=settings.PORTAL_LABEL_DOMAIN, listed_at=time.monotonic())
        try:
            for page in pod_pages(kube, label_selector=POD_SELECTOR, fields=PodFields,
                                  page_size=settings.PORTAL_RECONCILE_LIST_PAGE_SIZE):
                for pod in page.pods:
                    store.add(pod)
                store.resource_version = page.resource_version
                del page
            return store
        except KubeError as exc:
            if not is_expired(exc) or attempt == LIST_ATTEMPTS:
                raise
            logger.info("the pod list expired midway (%s); listing again", exc)
    raise AssertionError("unreachable")


def cluster_status_reconcile(
    *, cluster_id: int, watch_seconds: int | None = None, clock: Callable[[], datetime] = timezone.now,
    kube: KubeClient | None = None,
) -> RunOutcome:
    """One run of the reconciliation loop for a cluster (see the module docstring)."""
    cluster = Cluster.objects.get(pk=cluster_id)
    if watch_seconds is None:
        watch_seconds = settings.PORTAL_RECONCILE_WATCH_SECONDS
    if not cluster.api_server:
        note = (f"skipped: cluster {cluster.name} uses the {cluster.get_applier_display()} applier and has no API "
                "server, so the portal cannot see its pods; register it with --server to reconcile its requests.")
        _state_save(cluster, status=ReconcileStatus.SKIPPED, message=note, finished_at=timezone.now())
        return RunOutcome(cluster=cluster.name, status=ReconcileStatus.SKIPPED, message=note)
    lock = _lock(cluster, ttl=watch_seconds + settings.PORTAL_KUBE_TIMEOUT_SECONDS * 4 + 60)
    if not lock.acquire(blocking=False):
        return RunOutcome(cluster=cluster.name, status="busy",
                          message="another worker is reconciling this cluster; nothing done")
    own_client = kube is None
    try:
        kube = kube or KubeClient(cluster_connection(cluster))
    except KubeError as exc:  # unusable credentials or a refused URL: nothing to watch until someone fixes them
        with contextlib.suppress(Exception):
            lock.release()
        return _failed(cluster, RunOutcome(cluster=cluster.name, status=ReconcileStatus.ERROR),
                       f"cannot connect: {exc}")
    try:
        return _run(cluster, kube, watch_seconds, clock)
    finally:
        if own_client:
            kube.close()
        try:
            lock.release()
        except Exception:  # noqa: BLE001 - expired meanwhile: nothing to release
            pass


def _run(cluster: Cluster, kube: KubeClient, watch_seconds: int, clock: Callable[[], datetime]) -> RunOutcome:
    """LIST (or resume the watch), reconcile everything, then WATCH for the rest of the run. A resumed watch first
    catches up (the API server replays what happened since the last run) before the full cycle, so no decision is
    ever taken on a stale view; a watch that cannot resume (410 Gone, a broken connection) falls back to a LIST."""
    state = ClusterReconcileState.objects.filter(cluster=cluster).first()
    outcome = RunOutcome(cluster=cluster.name, status=ReconcileStatus.OK)
    with _STORES_LOCK:
        store = _POD_STORES.pop(cluster.pk, None)  # put back only once this run has brought it up to date
    listed_at = state.listed_at if state else None
    resumable = (watch_seconds > 0 and store is not None and state is not None and state.resource_version
                 and state.resource_version == store.resource_version
                 and time.monotonic() - store.listed_at < settings.PORTAL_RECONCILE_RELIST_SECONDS)
    if resumable:
        try:
            outcome.watch_events += _follow(cluster, kube, store, CATCH_UP_SECONDS, clock, outcome, reconcile=False)
        except KubeError as exc:
            outcome.message, resumable = f"the watch failed ({exc}); listed the pods again", False
    if not resumable:
        store = None  # the old facts go before the new list comes in
        try:
            store, outcome.listed, listed_at = _list(kube), True, timezone.now()
        except KubeError as exc:
            return _failed(cluster, outcome, f"could not list pods: {exc}")

    started = time.perf_counter()
    cycle = status_reconcile_facts(cluster=cluster, facts=store, now=clock())
    cycle_ms = int((time.perf_counter() - started) * 1000)
    _add(outcome, cycle)
    if cluster.gang_scheduler == KUEUE:
        try:
            outcome.events += kueue_preemptions_record(cluster=cluster, kube=kube, selector=POD_SELECTOR)
        except KubeError as exc:  # the pods' reconciliation stands; Kueue's evictions are read next run
            outcome.message = f"could not read Kueue's Workloads: {exc}"
    outcome.requests = cycle.requests

    if watch_seconds > 0:
        try:
            outcome.watch_events += _follow(cluster, kube, store, watch_seconds, clock, outcome, reconcile=True)
        except KubeError as exc:
            outcome.message = f"the watch failed ({exc}); listed the pods again"
            store = None
            try:
                store, outcome.listed, listed_at = _list(kube), True, timezone.now()
            except KubeError as list_exc:
                return _failed(cluster, outcome, f"{outcome.message}, which failed too: {list_exc}")
            _add(outcome, status_reconcile_facts(cluster=cluster, facts=store, now=clock()))
    outcome.pods = store.pods
    with _STORES_LOCK:
        _POD_STORES[cluster.pk] = store
    _state_save(cluster, status=ReconcileStatus.OK, message=outcome.message, resource_version=store.resource_version,
                listed_at=listed_at, finished_at=timezone.now(), pods=store.pods, requests=outcome.requests,
                transitions=outcome.transitions, events_recorded=outcome.events, watch_events=outcome.watch_events,
                cycle_ms=cycle_ms)  # fmt: skip
    return outcome


def _failed(cluster: Cluster, outcome: RunOutcome, message: str) -> RunOutcome:
    """Record a run that could not see the cluster; the next run lists afresh."""
    _state_save(cluster, status=ReconcileStatus.ERROR, message=message, finished_at=timezone.now(),
                resource_version="")
    return RunOutcome(cluster=cluster.name, status=ReconcileStatus.ERROR, message=message,
                      transitions=outcome.transitions, events=outcome.events, cycles=outcome.cycles)


def _add(outcome: RunOutcome, cycle: CycleOutcome) -> None:
    outcome.cycles += 1
    outcome.transitions += len(cycle.transitions)
    outcome.events += cycle.events


def _follow(cluster: Cluster, kube: KubeClient, store: PodStore, seconds: int, clock: Callable[[], datetime],
            outcome: RunOutcome, *, reconcile: bool) -> int:
    """Watch pod changes from the store's resourceVersion (the LIST's, or the last event's) until the server ends
    the watch after `seconds`, folding them into the store; with `reconcile`, reconcile the requests whose pods
    changed, in batches. Returns the number of events seen."""
    seen = 0
    touched: set[int] = set()
    last_flush = time.monotonic()

    def flush() -> None:
        nonlocal last_flush
        if touched and reconcile:
            ids = set(touched)
            touched.clear()
            _add(outcome, status_reconcile_facts(cluster=cluster, facts=store.pods_of(ids), now=clock(),
                                                 request_ids=ids))
        last_flush = time.monotonic()

    deadline = time.monotonic() + seconds + WATCH_FLUSH_SECONDS
    for event in watch_pods(kube, label_selector=POD_SELECTOR, timeout_seconds=seconds,
                            resource_version=store.resource_version or None, bookmarks=True):
        seen += 1
        request_id = store.apply(event.type, event.object)
        if request_id is not None:
            touched.add(request_id)
        if time.monotonic() - last_flush >= WATCH_FLUSH_SECONDS:
            flush()
        if time.monotonic() >= deadline:  # a server that ignores timeoutSeconds: stop on our own
            break
    flush()
    return seen


def status_reconcile_all() -> list[int]:
    """Beat: one reconciliation task per enabled cluster. Returns the cluster ids dispatched."""
    ids = list(Cluster.objects.filter(enabled=True).order_by("name").values_list("pk", flat=True))
    # A run that cannot start before the next beat is pointless: the next one replaces it.
    return [cluster_id for cluster_id in ids
            if send_now("provisioning.cluster_status_reconcile", cluster_id, what=f"the reconciliation of cluster {cluster_id}",
                        expires=settings.PORTAL_RECONCILE_INTERVAL_SECONDS)]
