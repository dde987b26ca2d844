"""Grid credentials: a join token, an admin token, and one credential per admitted node.

Tokens are 256-bit random strings (``secrets.token_urlsafe(32)``); only their SHA-256 is stored.
A fast hash is enough here because the secret is random, not a password a person chose (the
reasoning of OWASP's Password Storage Cheat Sheet applies to low-entropy passwords only).
Comparison is constant-time. ``redact`` is what every log line uses to mention a token.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rigwise.errors import GridError

ROLE_ADMIN = "admin"
ROLE_NODE = "node"
ROLE_JOIN = "join"
ADMIN_ACCOUNT = "admin"


@dataclass(frozen=True)
class Principal:
    """Who is calling: an account name, a role, and the node id for node credentials."""

    account: str
    role: str
    node_id: str | None = None

    @property
    def is_admin(self) -> bool:
        return self.role == ROLE_ADMIN


class Forbidden(GridError):
    """The caller is who it says, but this is not its to do (HTTP 403)."""


def require_owner(who: Principal, owner: str, what: str) -> None:
    """Refuse unless ``who`` is ``owner``'s account or the admin."""
    if not who.is_admin and who.account != owner:
        raise Forbidden(
            f"{what} belongs to {owner!r}, not to {who.account!r}.",
            hint="Only its owner or the grid admin may change it.",
        )


def new_token() -> str:
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def same_hash(token: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_token(token), stored_hash)


def redact(token: str) -> str:
    """A token as it may appear in a log: its first 4 characters only."""
    return f"{token[:4]}…" if token else "<none>"


def ray_auth_env(ray_token: str) -> dict[str, str]:
    """Environment turning on Ray token auth (Ray >= 2.52). It must be in ``os.environ``
    before ``ray`` is first imported in a process: Ray reads the mode once."""
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": ray_token}


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def write_secret(path: Path, secret: str) -> None:
    """Write a secret readable by its owner only (mode 0600), replacing any old one at once: it
    goes to a file of its own beside ``path`` (mkstemp: 0600), synced, then renamed over it, so
    a process killed mid-write leaves the old file whole, never an empty or half-written one
    (a truncated ``ledger-head`` read as a cut ledger after a killed coordinator)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f".{path.name}.*.tmp"):  # left by a process killed here
        stale.unlink(missing_ok=True)
    descriptor, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(secret + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    path.chmod(0o600)


def read_or_create_secret(path: Path) -> tuple[str, bool]:
    """The secret in ``path``; a new one is created (and True returned) when absent."""
    if path.exists():
        return path.read_text(encoding="utf-8").strip(), False
    secret = new_token()
    write_secret(path, secret)
    return secret, True
