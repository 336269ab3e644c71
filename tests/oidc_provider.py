"""A minimal OpenID Connect provider for tests: discovery, an authorize endpoint that signs in whoever the test
chose (no login form), a token endpoint issuing RS256-signed ID tokens, the JWKS and userinfo.

Standard library HTTP server in a thread; keys and tokens with ``joserfc`` (Authlib's JOSE library).  It checks
what a real provider checks and a client could get wrong: the client id and secret, the redirect URI, the one-use
code and its PKCE verifier; the ID token carries the nonce of the authorization request.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

from joserfc import jwt
from joserfc.jwk import RSAKey


@dataclass
class _Grant:
    client_id: str
    redirect_uri: str
    nonce: str | None
    challenge: str | None
    method: str | None
    user: dict[str, Any]


@dataclass
class OIDCProvider:
    """``with OIDCProvider(client_id, client_secret) as idp:``; set ``idp.user`` to the claims of who signs in next."""

    client_id: str = "arena-dashboard"
    client_secret: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    user: dict[str, Any] = field(default_factory=dict)
    key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": "test-key"}))
    issued: list[dict[str, Any]] = field(default_factory=list)  # the ID tokens' claims, in order
    _grants: dict[str, _Grant] = field(default_factory=dict)
    _tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    _server: ThreadingHTTPServer | None = None

    @property
    def issuer(self) -> str:
        assert self._server is not None, "not started"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def metadata_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    def __enter__(self) -> OIDCProvider:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                provider._get(self)

            def do_POST(self) -> None:
                provider._post(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # ------------------------------------------------------------------ endpoints
    def _discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "jwks_uri": f"{self.issuer}/jwks",
            "userinfo_endpoint": f"{self.issuer}/userinfo",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "scopes_supported": ["openid", "email", "profile"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "code_challenge_methods_supported": ["S256"],
            "claims_supported": ["sub", "email", "email_verified", "name", "groups"],
        }

    def _get(self, h: BaseHTTPRequestHandler) -> None:
        url = urlparse(h.path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/.well-known/openid-configuration":
            _json(h, 200, self._discovery())
        elif url.path == "/jwks":
            _json(h, 200, {"keys": [self.key.as_dict(private=False)]})
        elif url.path == "/authorize":
            self._authorize(h, q)
        elif url.path == "/userinfo":
            auth = h.headers.get("Authorization", "")
            claims = self._tokens.get(auth.removeprefix("Bearer "))
            _json(h, 200, claims) if claims else _json(h, 401, {"error": "invalid_token"})
        else:
            _json(h, 404, {"error": "not_found"})

    def _authorize(self, h: BaseHTTPRequestHandler, q: dict[str, str]) -> None:
        if q.get("client_id") != self.client_id or q.get("response_type") != "code" or not q.get("redirect_uri"):
            _json(h, 400, {"error": "invalid_request"})
            return
        if "openid" not in q.get("scope", "").split():
            _json(h, 400, {"error": "invalid_scope"})
            return
        if not self.user:
            _json(h, 400, {"error": "the test chose no user"})
            return
        code = secrets.token_urlsafe(16)
        self._grants[code] = _Grant(
            self.client_id,
            q["redirect_uri"],
            q.get("nonce"),
            q.get("code_challenge"),
            q.get("code_challenge_method"),
            dict(self.user),
        )
        back = {"code": code, **({"state": q["state"]} if "state" in q else {})}
        h.send_response(302)
        h.send_header("Location", f"{q['redirect_uri']}?{urlencode(back)}")
        h.end_headers()

    def _post(self, h: BaseHTTPRequestHandler) -> None:
        if urlparse(h.path).path != "/token":
            _json(h, 404, {"error": "not_found"})
            return
        body = h.rfile.read(int(h.headers.get("Content-Length", 0))).decode()
        form = {k: v[0] for k, v in parse_qs(body).items()}
        client_id, client_secret = form.get("client_id"), form.get("client_secret")
        auth = h.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            from urllib.parse import unquote

            user, _, password = base64.b64decode(auth[6:]).decode().partition(":")
            client_id, client_secret = unquote(user), unquote(password)
        if client_id != self.client_id or not secrets.compare_digest(client_secret or "", self.client_secret):
            _json(h, 401, {"error": "invalid_client"})
            return
        grant = self._grants.pop(form.get("code", ""), None)  # a code is used once
        if form.get("grant_type") != "authorization_code" or grant is None:
            _json(h, 400, {"error": "invalid_grant"})
            return
        if form.get("redirect_uri") != grant.redirect_uri:
            _json(h, 400, {"error": "invalid_grant", "error_description": "redirect_uri differs"})
            return
        if grant.challenge is not None:
            verifier = form.get("code_verifier", "")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if grant.method != "S256" or digest != grant.challenge:
                _json(h, 400, {"error": "invalid_grant", "error_description": "PKCE verifier"})
                return
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "aud": grant.client_id,
            "iat": now,
            "exp": now + 600,
            **({"nonce": grant.nonce} if grant.nonce else {}),
            **grant.user,
        }
        id_token = jwt.encode({"alg": "RS256", "kid": self.key.kid}, claims, self.key)
        access_token = secrets.token_urlsafe(24)
        self._tokens[access_token] = dict(grant.user)
        self.issued.append(claims)
        _json(
            h,
            200,
            {"access_token": access_token, "token_type": "Bearer", "expires_in": 600, "id_token": id_token},
        )


def _json(h: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
    data = json.dumps(payload).encode()
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Cache-Control", "no-store")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


def user(email: str, *, groups: tuple[str, ...] = (), verified: bool = True) -> dict[str, Any]:
    """The claims of a person signing in."""
    return {
        "sub": hashlib.sha256(email.encode()).hexdigest()[:16],
        "email": email,
        "email_verified": verified,
        "name": email.split("@")[0],
        **({"groups": list(groups)} if groups else {}),
    }
