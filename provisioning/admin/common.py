"""What several of the provisioning admins show: the discrepancy list and why live-only lists are empty."""
from django.utils.html import format_html, format_html_join

# Lists that only a cluster's API server fills (EmptyExplainedMixin).
LIVE_CLUSTER_ONLY = "The demo's clusters have no API server (they use the GitOps applier), so this stays empty there."


def discrepancy_html(items):
    if not items:
        return "none"
    return format_html("<ul>{}</ul>", format_html_join("", "<li><strong>{}</strong>: {}</li>",
                                                       ((d["field"], d["message"]) for d in items)))
