"""Outbound calls to addresses people typed in: which ones are allowed.

Two kinds of destination, each with its own allow list, because different people type them:
- `CLUSTER`: a cluster's API server and its Prometheus, entered by the platform team. On-premises ones live on
  private networks: `PORTAL_OUTBOUND_ALLOWED_NETWORKS` lists what they may reach.
- `WEBHOOK`: a team's notification webhook, entered by any of its engineers. `PORTAL_WEBHOOK_ALLOWED_NETWORKS` may
  open private networks to them (an internal chat relay), but loopback, link-local, unspecified, multicast and
  the clouds' metadata addresses (`WEBHOOK_NEVER`) are refused whatever either list says: an engineer's webhook
  must not reach the portal's own pod, its node or the cloud's credentials.

A URL is checked twice: when it is entered (a field validator, so a bad one is a field error in the API and the
admin) and again when the call is made (`check_url`). Both resolve the host name and check every address it
resolves to, and every IPv4 address embedded in an IPv6 one (mapped, compatible, 6to4, Teredo, NAT64): a blocked
address written another way is still blocked. The call then connects to the address that was checked (see
`provisioning.kube.client` and `post_pinned`), so a DNS answer that changes in between (rebinding) cannot send it
elsewhere. Loopback, link-local (cloud metadata at 169.254.169.254), private and other special ranges are denied
unless allowed; `PORTAL_OUTBOUND_DENIED_NETWORKS` denies more for both kinds, and wins over the allow lists.
"""
from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

import urllib3
from django.conf import settings
from django.core.exceptions import ValidationError

ALLOWED_SCHEMES = ("http", "https")
CLUSTER, WEBHOOK = "cluster", "webhook"
ALLOWED_SETTING = {CLUSTER: "PORTAL_OUTBOUND_ALLOWED_NETWORKS", WEBHOOK: "PORTAL_WEBHOOK_ALLOWED_NETWORKS"}

# Special-purpose ranges (IANA registries; RFC 6890): nothing the portal should reach unless told to.
DEFAULT_DENIED_NETWORKS = tuple(ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
    "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4",
    "240.0.0.0/4", "::/128", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001:db8::/32", "fc00::/7",
    "fe80::/10", "ff00::/8",
))  # fmt: skip
# Never a webhook's, whatever the settings: this host and its node (loopback, unspecified), the link
# (link-local, where the clouds' metadata services answer), multicast and broadcast, and the metadata
# addresses outside those ranges (AWS's IPv6 fd00:ec2::254, Alibaba's 100.100.100.200, Oracle's 192.0.0.192).
WEBHOOK_NEVER = tuple(ipaddress.ip_network(n) for n in (
    "0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "255.255.255.255/32", "100.100.100.200/32",
    "192.0.0.192/32", "::/128", "::1/128", "fe80::/10", "ff00::/8", "fd00:ec2::254/128",
))  # fmt: skip
# IPv6 ranges whose last 32 bits are an IPv4 address: NAT64 (RFC 6052, RFC 8215), IPv4-translated (RFC 2765).
_IPV4_IN_LOW_BITS = tuple(ipaddress.ip_network(n) for n in ("64:ff9b::/96", "64:ff9b:1::/48", "::ffff:0:0:0/96"))

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class OutboundBlocked(Exception):
    """The URL may not be called; the message says why and which setting would allow it."""


@dataclass(frozen=True)
class Destination:
    url: str
    scheme: str
    host: str  # as written in the URL (a name or an address)
    port: int
    address: str  # the checked address the connection must go to


def _networks(values) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(str(value), strict=False) for value in values)


def address_forms(address: Address) -> list[Address]:
    """The address and every IPv4 address embedded in it. `::ffff:a.b.c.d` is a.b.c.d itself; the IPv4-compatible
    `::a.b.c.d`, 6to4 `2002:AABB:CCDD::`, Teredo's client and NAT64 `64:ff9b::a.b.c.d` reach or name that IPv4
    address too, so each is checked beside the IPv6 address."""
    if isinstance(address, ipaddress.IPv4Address):
        return [address]
    if address.ipv4_mapped:
        return [address.ipv4_mapped]
    forms: list[Address] = [address]
    low = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if (int(address) >> 32 == 0 and int(address) > 1) or any(address in net for net in _IPV4_IN_LOW_BITS):
        forms.append(low)
    if address.sixtofour:
        forms.append(address.sixtofour)
    if address.teredo:
        forms.extend(address.teredo)  # (server, client)
    return forms


def address_allowed(address: Address, *, purpose: str = CLUSTER) -> bool:
    """Whether `purpose` (CLUSTER or WEBHOOK) may reach the address, in every form it takes."""
    forms = address_forms(address)
    if purpose == WEBHOOK and any(form in net for form in forms for net in WEBHOOK_NEVER):
        return False
    denied = _networks(settings.PORTAL_OUTBOUND_DENIED_NETWORKS)
    allowed = _networks(getattr(settings, ALLOWED_SETTING[purpose]))
    return all(_form_allowed(form, denied, allowed) for form in forms)


def _form_allowed(address: Address, denied, allowed) -> bool:
    if any(address in net for net in denied):
        return False
    if any(address in net for net in allowed):
        return True
    return not any(address in net for net in DEFAULT_DENIED_NETWORKS)


def _split(url: str) -> tuple[str, str, int]:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise OutboundBlocked(f"not a valid URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise OutboundBlocked(f"only http and https URLs are called, not {scheme or 'a URL without a scheme'}")
    if parts.username is not None or parts.password is not None:
        raise OutboundBlocked("a URL may not carry a user name or password")
    if not parts.hostname:
        raise OutboundBlocked("the URL names no host")
    return scheme, parts.hostname, port or (443 if scheme == "https" else 80)


def _resolve(host: str, port: int) -> list[Address]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise OutboundBlocked(f"the host {host} cannot be resolved ({exc})") from None
    # An address with a zone (fe80::1%eth0) is link-local, so denied unless allowed: drop the zone to parse it.
    return list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos))


def check_url(url: str, *, purpose: str = CLUSTER) -> Destination:
    """Resolve and check `url` for `purpose` (CLUSTER: API servers and Prometheus; WEBHOOK: team webhooks); every
    address the host resolves to must be allowed. Raises OutboundBlocked."""
    scheme, host, port = _split(url)
    addresses = _resolve(host, port)
    denied = [_shown(a) for a in addresses if not address_allowed(a, purpose=purpose)]
    if denied:
        if purpose == WEBHOOK and any(form in net for a in addresses for form in address_forms(a)
                                      for net in WEBHOOK_NEVER):
            raise OutboundBlocked(
                f"{host} resolves to {', '.join(denied)}: a webhook never calls a loopback, link-local, metadata "
                "or multicast address")
        raise OutboundBlocked(
            f"{host} resolves to {', '.join(denied)}, a loopback, link-local, private or otherwise reserved "
            f"address the portal does not call; list its network in {ALLOWED_SETTING[purpose]} if it is "
            "meant to be reached"
        )
    return Destination(url=url, scheme=scheme, host=host, port=port, address=str(addresses[0]))


def _shown(address: Address) -> str:
    """`::a9fe:a9fe (169.254.169.254)`: the address, and the IPv4 addresses it embeds."""
    embedded = [str(form) for form in address_forms(address) if form != address]
    return f"{address} ({', '.join(embedded)})" if embedded else str(address)


def _validate(value: str, purpose: str) -> None:
    if not value:
        return
    try:
        check_url(value, purpose=purpose)
    except OutboundBlocked as exc:
        raise ValidationError(str(exc), code="outbound_blocked") from None


def validate_outbound_url(value: str) -> None:
    """Field validator of a cluster-side URL (a cluster's Prometheus): one the portal would call."""
    _validate(value, CLUSTER)


def validate_webhook_url(value: str) -> None:
    """Field validator of a team's webhook URL."""
    _validate(value, WEBHOOK)


def validate_api_server_url(value: str) -> None:
    """Field validator for a cluster's API server: as `validate_outbound_url`, except the portal's own cluster
    (PORTAL_IN_CLUSTER_SERVER, from the pod's environment), which is the operator's configuration."""
    if value and value.rstrip("/") == (settings.PORTAL_IN_CLUSTER_SERVER or "").rstrip("/"):
        return
    validate_outbound_url(value)


def _pinned_pool(destination: Destination, *, timeout: float):
    """A one-connection pool to the checked address, the request target and the Host header of the URL."""
    kwargs = {"timeout": urllib3.Timeout(total=timeout), "retries": False, "maxsize": 1}
    if destination.scheme == "https":
        pool = urllib3.HTTPSConnectionPool(
            destination.address, destination.port, server_hostname=destination.host,
            assert_hostname=destination.host, cert_reqs="CERT_REQUIRED", **kwargs,
        )  # fmt: skip
    else:
        pool = urllib3.HTTPConnectionPool(destination.address, destination.port, **kwargs)
    parts = urlsplit(destination.url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    default_port = 443 if destination.scheme == "https" else 80
    host_header = destination.host if ":" not in destination.host else f"[{destination.host}]"
    if destination.port != default_port:
        host_header = f"{host_header}:{destination.port}"
    return pool, target, host_header


@dataclass(frozen=True)
class PinnedResponse:
    status: int
    reason: str


def post_pinned(destination: Destination, *, body: bytes, headers: dict[str, str], timeout: float) -> PinnedResponse:
    """POST to the checked address of `destination`, never following a redirect. TLS is verified against the host
    name of the URL (SNI and certificate), the Host header is the URL's; only the TCP connection is pinned."""
    pool, target, host_header = _pinned_pool(destination, timeout=timeout)
    try:
        response = pool.urlopen("POST", target, body=body, headers={**headers, "Host": host_header},
                                redirect=False, preload_content=False, assert_same_host=False)
        try:
            response.read(1024)  # the receiver's answer is never shown anywhere; its status is what counts
        finally:
            response.release_conn()
        return PinnedResponse(status=response.status, reason=response.reason or "")
    finally:
        pool.close()


@dataclass(frozen=True)
class PinnedBody:
    status: int
    body: bytes


def get_pinned(destination: Destination, *, timeout: float, max_bytes: int) -> PinnedBody:
    """GET from the checked address of `destination` (as `post_pinned`: no redirect, TLS checked against the URL's
    host) and read at most `max_bytes` of the answer; a longer one raises OutboundBlocked rather than fill memory."""
    pool, target, host_header = _pinned_pool(destination, timeout=timeout)
    try:
        response = pool.urlopen("GET", target, headers={"Host": host_header, "Accept": "application/json"},
                                redirect=False, preload_content=False, assert_same_host=False)
        try:
            body = response.read(max_bytes + 1)
        finally:
            response.release_conn()
        if len(body) > max_bytes:
            raise OutboundBlocked(f"the answer is larger than {max_bytes} bytes")
        return PinnedBody(status=response.status, body=body)
    finally:
        pool.close()
