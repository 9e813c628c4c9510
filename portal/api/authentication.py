"""`Authorization: Token <secret>` against the hashed API tokens (portal.models.ApiToken)."""
from __future__ import annotations

from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from .. import services


class ApiTokenAuthentication(TokenAuthentication):
    keyword = "Token"

    def authenticate_credentials(self, key):
        token = services.token_authenticate(clear=key)
        # One message for unknown, revoked and expired tokens: the answer tells a guesser nothing.
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked token.")
        return token.user, token
