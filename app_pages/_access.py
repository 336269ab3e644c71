"""Sign-in, roles and the admin token: who this session is and which pages and actions it may use.

Each page's role is in the page registry (``app_pages/_registry.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import streamlit as st

from app_pages._registry import pages
from core.app.access import (
    Identity,
    RolesError,
    allows,
    identity_of,
    metadata_urls,
    provider_problem,
    role_of,
    role_table,
)
from core.app.safe_text import escape_markdown as esc

# ==================================================================== access
# With ``[auth]`` in Streamlit's secrets, people sign in through an OpenID Connect provider (``st.login``) and
# the ``[roles]`` table gives each a role (``core.app.access``): viewer (every results page), annotator (the Vote
# page, voting under their email), admin (the Admin page and the Evaluate page's form).  Without ``[auth]``
# the dashboard is open to whoever reaches it, and the admin and vote tokens guard what they guard.
# Each page's role is in the page registry (app_pages/_registry.py).


@dataclass(frozen=True)
class Access:
    """This session's sign-in state and role."""

    sign_in: bool  # an identity provider is configured: people sign in and roles decide
    signed_in: bool = False
    identity: Identity | None = None
    role: str | None = None
    error: str | None = None  # the [roles] table is malformed

    def can(self, needed: str) -> bool:
        """Whether this session may do what ``needed`` (a role) may; without sign-in, the token modes decide."""
        return not self.sign_in or allows(self.role, needed)


def _secret(name: str) -> Any:
    try:
        return st.secrets.get(name)
    except Exception:  # no secrets file
        return None


def sign_in_configured() -> bool:
    """Whether ``[auth]`` is in the secrets: the dashboard then uses ``st.login`` and the ``[roles]`` table."""
    return bool(_secret("auth"))


def access() -> Access:
    """Who this session is and what their role allows (``core.app.access``)."""
    if not sign_in_configured():
        return Access(sign_in=False)
    claims = dict(st.user.to_dict())
    if not claims.get("is_logged_in"):
        return Access(sign_in=True)
    try:
        table = role_table(_secret("roles"))
    except RolesError as exc:
        return Access(sign_in=True, signed_in=True, error=str(exc))
    who = identity_of(claims, table.groups_claim, table.trust_unverified_email)
    return Access(sign_in=True, signed_in=True, identity=who, role=role_of(table, who))


def allowed_pages(gate: Access) -> list[str]:
    """The pages this session may open (the navigation lists only these)."""
    return [key for key, page in pages().items() if gate.can(page.role)]


def sign_in_page() -> None:
    """The only page a visitor without a role sees: a sign-in button, or why their account cannot go further."""
    gate = access()
    st.title("Judge Arena")
    if not gate.signed_in:
        problem = st.session_state.get("_provider_problem")
        if problem:
            st.error(
                f"Signing in is not possible right now: the identity provider at {esc(problem[0])} cannot be "
                f"used ({esc(problem[1])}). Nothing was changed; try again in a moment, or ask the dashboard's "
                "admin if it persists."
            )
        st.write("Sign in to see the dashboard.")
        label = "Try again" if problem else "Sign in"
        st.button(label, type="primary", icon=":material/login:", on_click=_sign_in, key="sign_in_button")
        return
    if gate.error:
        st.error(f"Sign-in is configured, but the roles table cannot be read: {gate.error}")
    else:
        who = gate.identity.name if gate.identity else "this account"
        st.warning(f"You are signed in as {esc(who)}, which has no role on this dashboard. Ask its admin for one.")
    st.button("Sign out", icon=":material/logout:", on_click=st.logout, key="sign_out_button")


def _sign_in() -> None:
    """Hand the browser to the identity provider, unless it is down: then stay here and say so (Streamlit's
    callback would end on a bare "Authentication error" page with no way back)."""
    for url in metadata_urls(_secret("auth")):
        problem = provider_problem(url)
        if problem is not None:
            st.session_state["_provider_problem"] = (url, problem)
            return
    st.session_state.pop("_provider_problem", None)
    st.login()


def signed_in_sidebar(gate: Access) -> None:
    """Who is signed in, with which role, and the way out."""
    if not gate.signed_in:
        return
    with st.sidebar:
        who = gate.identity.name if gate.identity else "unknown"
        st.caption(f"Signed in as {esc(who)} ({gate.role or 'no role'})")
        st.button("Sign out", icon=":material/logout:", on_click=st.logout, key="sidebar_sign_out")


def forbidden(what: str, needed: str) -> None:
    """Stop a page (or a part of one) that this session's role does not allow."""
    gate = access()
    who = esc(gate.identity.name) if gate.identity else "you"
    st.error(f"{what} needs the {needed} role; {who} signed in as {gate.role or 'no role'}.", icon=":material/block:")
    st.stop()


# ===================================================================== admin
def configured_admin_token() -> str | None:
    """The admin token (environment, else ``admin_token`` in secrets.toml); None: starting work is disabled."""
    from core.redact import ADMIN_TOKEN_ENV, register

    token = os.environ.get(ADMIN_TOKEN_ENV)
    if not token:
        try:
            token = st.secrets.get("admin_token")
        except Exception:  # no secrets file
            token = None
    if token:
        register(str(token))  # a token from secrets.toml is redacted like the environment's
    return str(token) if token else None


def admin_unlocked(token: str, key: str) -> bool:
    """A password field for the admin token; True once the right token is entered (compared in constant time)."""
    import hmac

    given = st.text_input("Admin token", type="password", key=key)
    if given and not hmac.compare_digest(given.encode(), token.encode()):
        st.error("Wrong token.")
    return bool(given) and hmac.compare_digest(given.encode(), token.encode())
