"""A small OpenID Connect provider speaking the real protocol over HTTP, for tests: discovery, an authorization
endpoint that signs the configured person in at once (redirecting back with code and state), a token endpoint
(client authentication, single-use codes, PKCE S256, redirect_uri check) issuing RS256 id_tokens, JWKS and
userinfo. Misbehaviours to test the relying party's checks are switched on with `tamper`.
"""
from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

TAMPERINGS = {None, "signature", "nonce", "audience", "issuer", "expired", "userinfo_sub"}
_KEYS: list = []


def _keys():
    """The provider's signing key and a rogue one, made once per test run (RSA key generation is slow)."""
    if not _KEYS:
        _KEYS.extend(rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in range(2))
    return _KEYS


class OidcProviderStub:
    def __init__(self, client_id: str = "gpu-portal", client_secret: str = "portal-secret"):
        self.client_id = client_id
        self.client_secret = client_secret
        self.key, self.rogue_key = _keys()
        self.kid = "stub-key-1"
        self.person: dict = {}
        self.tamper: str | None = None
        self.codes: dict[str, dict] = {}
        self.tokens: dict[str, dict] = {}
        self.calls: list[tuple[str, str]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.issuer = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # --- lifecycle ------------------------------------------------------------------------------------------------

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    @property
    def discovery_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    def sign_in_as(self, **claims) -> None:
        """The person the authorization endpoint signs in next (claims beyond `sub` go to id_token and userinfo)."""
        self.person = claims

    # --- protocol -------------------------------------------------------------------------------------------------

    def discovery(self) -> dict:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "userinfo_endpoint": f"{self.issuer}/userinfo",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
        }

    def jwks(self) -> dict:
        key = jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return {"keys": [{**key, "kid": self.kid, "alg": "RS256", "use": "sig"}]}

    def authorize(self, query: dict) -> tuple[int, dict]:
        if query.get("response_type") != "code" or query.get("client_id") != self.client_id:
            return 400, {"error": "unauthorized_client"}
        if "openid" not in query.get("scope", "").split():
            return 400, {"error": "invalid_scope"}
        code = secrets.token_urlsafe(24)
        self.codes[code] = {
            "redirect_uri": query["redirect_uri"],
            "nonce": query.get("nonce"),
            "challenge": query.get("code_challenge"),
            "method": query.get("code_challenge_method"),
            "person": dict(self.person),
        }
        location = f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query.get('state', '')})}"
        return 302, {"Location": location}

    def token(self, form: dict, authorization: str | None) -> tuple[int, dict]:
        client_id, client_secret = form.get("client_id"), form.get("client_secret")
        if authorization and authorization.startswith("Basic "):
            client_id, _, client_secret = base64.b64decode(authorization[6:]).decode().partition(":")
        if (client_id, client_secret) != (self.client_id, self.client_secret):
            return 401, {"error": "invalid_client"}
        grant = self.codes.pop(form.get("code", ""), None)  # codes are single-use
        if form.get("grant_type") != "authorization_code" or grant is None:
            return 400, {"error": "invalid_grant"}
        if form.get("redirect_uri") != grant["redirect_uri"]:
            return 400, {"error": "invalid_grant", "error_description": "redirect_uri differs"}
        if grant["challenge"]:
            verifier = form.get("code_verifier", "")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if grant["method"] != "S256" or digest != grant["challenge"]:
                return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}
        person = grant["person"]
        now = int(time.time())
        claims = {
            "iss": self.issuer if self.tamper != "issuer" else "https://evil.example",
            "sub": person["sub"],
            "aud": self.client_id if self.tamper != "audience" else "another-client",
            "iat": now,
            "exp": now + 300 if self.tamper != "expired" else now - 600,
            "nonce": grant["nonce"] if self.tamper != "nonce" else "not-the-nonce-you-sent",
            **{k: v for k, v in person.items() if k != "sub"},
        }
        key = self.key if self.tamper != "signature" else self.rogue_key
        id_token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": self.kid})
        access_token = secrets.token_urlsafe(24)
        self.tokens[access_token] = person
        return 200, {"access_token": access_token, "token_type": "Bearer", "expires_in": 300, "id_token": id_token}

    def userinfo(self, authorization: str | None) -> tuple[int, dict]:
        token = (authorization or "").removeprefix("Bearer ")
        person = self.tokens.get(token)
        if person is None:
            return 401, {"error": "invalid_token"}
        if self.tamper == "userinfo_sub":
            return 200, {**person, "sub": "someone-else"}
        return 200, dict(person)

    # --- HTTP -----------------------------------------------------------------------------------------------------

    def _handler(self):
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _send(self, status: int, body: dict):
                if status == 302:
                    self.send_response(302)
                    self.send_header("Location", body["Location"])
                    self.end_headers()
                    return
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                url = urlsplit(self.path)
                stub.calls.append(("GET", url.path))
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path == "/.well-known/openid-configuration":
                    self._send(200, stub.discovery())
                elif url.path == "/jwks":
                    self._send(200, stub.jwks())
                elif url.path == "/authorize":
                    self._send(*stub.authorize(query))
                elif url.path == "/userinfo":
                    self._send(*stub.userinfo(self.headers.get("Authorization")))
                else:
                    self._send(404, {"error": "not_found"})

            def do_POST(self):
                url = urlsplit(self.path)
                stub.calls.append(("POST", url.path))
                length = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                if url.path == "/token":
                    self._send(*stub.token(form, self.headers.get("Authorization")))
                else:
                    self._send(404, {"error": "not_found"})

        return Handler
