"""Who is calling: `Authorization: Bearer <token>` on the REST API (tokens from `personaboard users`).

Reading stays anonymous; submitting needs an identity, operator actions an admin. A failure says
what is wrong with the credentials, never whether a user exists.
"""

from __future__ import annotations

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from submissions.identity import Identity

bearer = HTTPBearer(
    auto_error=False, description="an API token from `personaboard users token NAME`"
)


def _unauthorized(message: str) -> HTTPException:
    return HTTPException(
        401,
        {
            "message": message,
            "problems": [{"line": None, "field": "Authorization", "message": message}],
        },
        headers={"WWW-Authenticate": "Bearer"},
    )


def optional_identity(
    request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)
) -> Identity | None:
    if credentials is None:
        return None
    identity = request.app.state.services.identities.authenticate(credentials.credentials)
    if identity is None:
        raise _unauthorized("the API token is not valid (unknown or revoked)")
    return identity


def require_identity(identity: Identity | None = Depends(optional_identity)) -> Identity:
    if identity is None:
        raise _unauthorized(
            "submitting needs an identity: send `Authorization: Bearer <API token>` "
            "(an operator issues tokens with `personaboard users token NAME`)"
        )
    return identity


def require_admin(identity: Identity = Depends(require_identity)) -> Identity:
    if not identity.is_admin:
        raise HTTPException(
            403,
            {
                "message": "this action needs an operator (admin) token",
                "problems": [{"line": None, "field": "Authorization", "message": "not an admin"}],
            },
        )
    return identity
