"""What several of the provisioning admins show: the discrepancy list and why live-only lists are empty."""
from django.utils.html import format_html, format_html_join

# Lists that only a cluster's API server fills (EmptyExplainedMixin).
LIVE_CLUSTER_ONLY = ("Only clusters the portal reads through their API server fill it: in the demo, gpu-east (the simulated "
                     "cluster ./scripts/demo starts) within its first minutes; gpu-west, a GitOps repository with no "
                     "API server, never.")


def discrepancy_html(items):
    if not items:
        return "none"
    return format_html("<ul>{}</ul>", format_html_join("", "<li><strong>{}</strong>: {}</li>",
                                                       ((d["field"], d["message"]) for d in items)))
