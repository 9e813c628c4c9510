"""Pure Kubernetes manifest renderer: request and team specs in, plain dicts out (no Django, no I/O).

render(request, cluster)              -> the request's objects, in apply order
render_team(team, cluster)            -> Namespace, ResourceQuota, NetworkPolicies, gang queue
render_priority(request, cluster)     -> the PriorityClass (and Kueue WorkloadPriorityClass) the request names
render_all(team, request, cluster)    -> all three, in apply order
validate_objects(objects, "1.36")     -> offline schema validation (ManifestInvalid)
selector_for_request(id, domain)      -> labels the appliers select a request's objects by
"""

from .errors import ManifestInvalid, Problem, RenderError
from .labels import selector_for_request, selector_string
from .names import k8s_name
from .render import render, render_all, render_priority
from .team import render_team
from .validation import validate_objects

__all__ = [
    "ManifestInvalid",
    "Problem",
    "RenderError",
    "k8s_name",
    "render",
    "render_all",
    "render_priority",
    "render_team",
    "selector_for_request",
    "selector_string",
    "validate_objects",
]
