from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from rigwise.grid import auth


def test_tokens_are_random_and_hashed() -> None:
    first, second = auth.new_token(), auth.new_token()
    assert first != second and len(first) >= 40
    digest = auth.hash_token(first)
    assert first not in digest
    assert auth.same_hash(first, digest)
    assert not auth.same_hash(second, digest)


def test_bearer_header_parsing() -> None:
    assert auth.bearer("Bearer abc") == "abc"
    assert auth.bearer("bearer  abc ") == "abc"
    assert auth.bearer("Basic abc") is None
    assert auth.bearer(None) is None
    assert auth.bearer("Bearer ") is None


def test_secrets_are_owner_only_and_stable(tmp_path: Path) -> None:
    path = tmp_path / "admin-token"
    secret, created = auth.read_or_create_secret(path)
    assert created
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again, created_again = auth.read_or_create_secret(path)
    assert (again, created_again) == (secret, False)


def test_redact_shows_only_a_prefix() -> None:
    token = auth.new_token()
    assert auth.redact(token) == token[:4] + "…"
    assert token not in auth.redact(token)


def test_a_secret_is_replaced_whole_or_not_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A coordinator killed while rewriting ledger-head left it empty (opened with O_TRUNC, not yet
    # written), and the ledger then read as cut. The new text goes to a file of its own, renamed
    # over the old one: a failure before the rename leaves the old text and no stray file.
    path = tmp_path / "ledger-head"
    auth.write_secret(path, "old")
    real_replace = os.replace

    def killed(*args: object) -> None:
        raise KeyboardInterrupt  # stands for the process dying between write and rename

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        auth.write_secret(path, "new")
    assert path.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger-head"]
    monkeypatch.setattr(os, "replace", real_replace)
    (tmp_path / ".ledger-head.abc.tmp").write_text("a stale copy", encoding="utf-8")  # SIGKILL's
    auth.write_secret(path, "new")
    assert path.read_text(encoding="utf-8") == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger-head"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
