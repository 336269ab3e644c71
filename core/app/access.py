"""Who may do what when people sign in through an identity provider (OpenID Connect).

The dashboard's ``[roles]`` table (Streamlit secrets) lists, per role, who has it::

    [roles]
    admins = ["lead@example.org"]
    annotators = ["@example.org", "group:raters"]
    viewers = ["*"]
    groups_claim = "groups"   # optional: the ID-token claim that lists a person's groups
    trust_unverified_email = false   # optional: see below

An entry is an email address (any case), ``@domain`` (every address at
exactly that domain, not its subdomains), ``group:NAME`` (everyone whose
groups claim lists NAME) or ``*`` (everyone the identity provider signs in).
Roles are cumulative: an admin may also vote and view, an annotator may also
view.  A person listed nowhere has no role and sees nothing but a sign-out
button.  An address counts only when the provider says it is verified
(``email_verified`` is true): absent, null, 0 or false, it matches no email or
domain entry (a provider that omits the claim, or lets users edit their email,
would otherwise let anyone claim an admin's address).  A provider whose
addresses are verified by construction (a company directory that sends no
claim) can be trusted with ``trust_unverified_email = true``; groups and ``*``
never depend on the email.

This module only decides; the pages ask it (``app_pages/_access.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

VIEWER, ANNOTATOR, ADMIN = "viewer", "annotator", "admin"
ROLES = (VIEWER, ANNOTATOR, ADMIN)  # each can do what the ones before it can
_TABLE_KEYS = {"viewers": VIEWER, "annotators": ANNOTATOR, "admins": ADMIN}
DEFAULT_GROUPS_CLAIM = "groups"


class RolesError(ValueError):
    """The ``[roles]`` table is malformed (said with the key at fault)."""


@dataclass(frozen=True)
class RoleTable:
    admins: tuple[str, ...] = ()
    annotators: tuple[str, ...] = ()
    viewers: tuple[str, ...] = ()
    groups_claim: str = DEFAULT_GROUPS_CLAIM
    trust_unverified_email: bool = False

    def entries(self, role: str) -> tuple[str, ...]:
        return {ADMIN: self.admins, ANNOTATOR: self.annotators, VIEWER: self.viewers}[role]

    @property
    def empty(self) -> bool:
        return not (self.admins or self.annotators or self.viewers)


def role_table(mapping: Mapping[str, Any] | None) -> RoleTable:
    """The ``[roles]`` secrets table, checked: each role a list of strings (a single string is a list of one)."""
    if not mapping:
        return RoleTable()
    unknown = sorted(set(mapping) - set(_TABLE_KEYS) - {"groups_claim", "trust_unverified_email"})
    if unknown:
        raise RolesError(
            f"[roles]: unknown key {unknown[0]!r}; use admins, annotators, viewers, groups_claim, "
            "trust_unverified_email"
        )
    lists: dict[str, tuple[str, ...]] = {}
    for key in _TABLE_KEYS:
        value = mapping.get(key, ())
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
            raise RolesError(f"[roles]: {key} must be a list of strings")
        cleaned = tuple(v.strip() for v in value if v.strip())
        for v in cleaned:
            if not _valid_entry(v):
                raise RolesError(f"[roles]: {key} entry {v!r} is none of: an email address, @domain, group:NAME, *")
        lists[key] = cleaned
    claim = mapping.get("groups_claim", DEFAULT_GROUPS_CLAIM)
    if not isinstance(claim, str) or not claim:
        raise RolesError("[roles]: groups_claim must be a claim name")
    trust = mapping.get("trust_unverified_email", False)
    if not isinstance(trust, bool):
        raise RolesError("[roles]: trust_unverified_email must be true or false")
    return RoleTable(lists["admins"], lists["annotators"], lists["viewers"], claim, trust)


def _valid_entry(entry: str) -> bool:
    if entry == "*":
        return True
    if entry.startswith("group:"):
        return len(entry) > len("group:")
    local, at, domain = entry.rpartition("@")
    return bool(at) and "." in domain and "@" not in local and " " not in entry


def _matches(entry: str, email: str | None, groups: Sequence[str]) -> bool:
    if entry == "*":
        return True
    if entry.startswith("group:"):
        return entry[len("group:") :] in groups
    if email is None:
        return False
    if entry.startswith("@"):
        return email.rpartition("@")[2] == entry[1:].lower()
    return email == entry.lower()


@dataclass(frozen=True)
class Identity:
    """A signed-in person as the identity provider describes them."""

    email: str | None
    groups: tuple[str, ...] = ()
    subject: str | None = None

    @property
    def name(self) -> str:
        """What their votes are stored under: the email address, else the provider's subject id."""
        return self.email or f"sub:{self.subject}"


def identity_of(
    claims: Mapping[str, Any], groups_claim: str = DEFAULT_GROUPS_CLAIM, trust_unverified_email: bool = False
) -> Identity:
    """The identity in an ID token's claims (``st.user``): a verified email, the groups, the subject.

    The email counts only when ``email_verified`` is true (the boolean, or the string "true" some providers
    send); absent, null, 0 or false it is dropped, unless the roles table trusts the provider's addresses.
    """
    email = claims.get("email")
    verified = claims.get("email_verified")
    trusted = verified is True or (isinstance(verified, str) and verified.strip().lower() == "true")
    if not (trusted or trust_unverified_email) or not isinstance(email, str) or "@" not in email:
        email = None
    raw = claims.get(groups_claim) or ()
    groups = (raw,) if isinstance(raw, str) else tuple(str(g) for g in raw) if isinstance(raw, Sequence) else ()
    subject = claims.get("sub")
    return Identity(email.strip().lower() if email else None, groups, str(subject) if subject else None)


def role_of(table: RoleTable, who: Identity) -> str | None:
    """The highest role the table gives ``who``; None when it lists them nowhere."""
    for role in reversed(ROLES):
        if any(_matches(entry, who.email, who.groups) for entry in table.entries(role)):
            return role
    return None


def allows(role: str | None, needed: str) -> bool:
    """Whether ``role`` can do what ``needed`` can (roles are cumulative)."""
    return role is not None and ROLES.index(role) >= ROLES.index(needed)


def metadata_urls(auth: Mapping[str, Any] | None) -> list[str]:
    """The OpenID Connect discovery URLs of Streamlit's ``[auth]`` secrets: its own and each named provider's
    (``[auth.<name>]``)."""
    if not auth:
        return []
    found = [auth.get("server_metadata_url")]
    found += [v.get("server_metadata_url") for v in auth.values() if isinstance(v, Mapping)]
    return [u for u in found if isinstance(u, str) and u]


def provider_problem(url: str, timeout_s: float = 5.0) -> str | None:
    """Why the identity provider cannot be used now (its discovery document does not answer with JSON), or
    None.  Checked before handing the browser to the provider: when it is down, Streamlit's own callback can
    only show a bare "Authentication error" page with no way back."""
    import json
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            json.loads(resp.read(1_000_000))
    except urllib.error.HTTPError as exc:
        return f"its discovery document answered HTTP {exc.code}"
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"it does not answer ({type(reason).__name__ if not isinstance(reason, str) else reason})"
    except ValueError:
        return "its discovery document is not JSON"
    return None
