"""The receiver code in docs/clusters-and-credentials.md verifies what the portal signs (so the page cannot drift
from `portal.webhooks`), and rejects a changed body, another secret and an old timestamp."""
from __future__ import annotations

import re
import time
from pathlib import Path

from portal.webhooks import signature_header

DOC = Path(__file__).resolve().parents[2] / "docs" / "clusters-and-credentials.md"


def documented_verifier():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    namespace: dict = {}
    exec(blocks[0], namespace)  # noqa: S102 - our own documentation's sample
    return namespace["portal_signature_valid"]


def test_the_documented_receiver_verifies_the_portals_signature():
    verify = documented_verifier()
    body = b'{"event": "gang.stalled", "request": {"id": 7}}'
    header = signature_header("whsec_team-secret", body)

    assert verify("whsec_team-secret", header, body)
    assert not verify("whsec_team-secret", header, body.replace(b"7", b"8"))
    assert not verify("whsec_other", header, body)
    stale = signature_header("whsec_team-secret", body, timestamp=int(time.time()) - 3600)
    assert not verify("whsec_team-secret", stale, body)
