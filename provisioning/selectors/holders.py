"""Who holds the GPUs of stored nodes: their pods grouped per request (or per pod the portal did not make), named
as the viewer may see them. Read by the fit check and the MIG planner's inputs."""
from __future__ import annotations

import datetime

from intake.models import GpuRequest

from .. import fit
from ..contract import parse_time
from ..models import Node


def running_holders(nodes: list[Node], *, exclude_request_id: int | None,
                    visible_team_ids: set[int] | None = None) -> list[fit.Holder]:
    """Running work on these nodes, per request (or per pod the portal did not make). With `visible_team_ids`
    (an engineer's teams), work of other teams is shown without its name, team or pods."""
    pods_by_key: dict[str, list[tuple[str, dict]]] = {}
    for node in nodes:
        for pod in node.gpu_pods or []:
            if pod.get("request_id") == exclude_request_id and exclude_request_id is not None:
                continue
            pods_by_key.setdefault(holder_key(pod), []).append((node.name, pod))
    ids = [int(k.split(":")[1]) for k in pods_by_key if k.startswith("request:")]
    requests = {r.pk: r for r in GpuRequest.objects.filter(pk__in=ids).select_related("team")}
    holders = []
    for key, entries in sorted(pods_by_key.items()):
        held: dict[str, dict[str, int]] = {}
        for node_name, pod in entries:
            for resource, count in (pod.get("resources") or {}).items():
                held.setdefault(node_name, {})[resource] = held.get(node_name, {}).get(resource, 0) + count
        starts = sorted(p["started_at"] for _, p in entries if p.get("started_at"))
        request = requests.get(int(key.split(":")[1])) if key.startswith("request:") else None
        hidden = visible_team_ids is not None and (request is None or request.team_id not in visible_team_ids)
        if request is not None:
            hours = request.answers.get("expected_hours")
            start = parse_time(starts[0], strict=True) if starts else None
            end = start + datetime.timedelta(hours=float(hours)) if start and hours else None
            if hidden:
                holders.append(fit.Holder(key=key, label="running work of another team", held=held,
                                          expected_end=end))
                continue
            label = f"#{request.pk} {request.team.slug}/{request.name} ({request.status})"
            holders.append(fit.Holder(key=key, label=label, held=held, request_id=request.pk,
                                      team=request.team.slug, expected_end=end))
        elif hidden:
            holders.append(fit.Holder(key=key, label="running work the portal did not start", held=held))
        else:
            _, pod = entries[0]
            owner = f"request #{key.split(':')[1]} (unknown to this portal)" if key.startswith("request:") else (
                f"pod {pod['namespace']}/{pod['name']} (not from the portal)")
            holders.append(fit.Holder(key=key, label=owner, held=held))
    return holders


def holder_key(pod: dict) -> str:
    return f"request:{pod['request_id']}" if pod.get("request_id") else f"pod:{pod['namespace']}/{pod['name']}"


def request_owners(request_ids) -> dict[int, str]:
    return dict(GpuRequest.objects.filter(pk__in=list(request_ids)).values_list("pk", "requested_by__username"))
