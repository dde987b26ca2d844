"""`rigwise ui`: an address it cannot serve on is bad input (exit 2), checked before serving."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from rigwise.cli import main


@pytest.fixture(autouse=True)
def _never_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the UI must not start serving in these tests")

    monkeypatch.setattr(uvicorn, "run", refuse)


@pytest.mark.parametrize(
    ("host", "says"),
    [
        # before: 'rigwise UI on http://bogus.invalid:...' then uvicorn's 'ERROR: [Errno -2]',
        # exit 3
        ("bogus.invalid", "Give an address of this machine"),
        ("10.255.255.1", "Give an address of this machine"),
    ],
)
def test_an_address_not_on_this_machine_exits_2(
    capsys: pytest.CaptureFixture[str], host: str, says: str
) -> None:
    code = main(["ui", "--host", host, "--port", "18767", "--json"])
    answer = json.loads(capsys.readouterr().out)
    assert code == 2 and f"Cannot serve the UI on {host}:18767" in answer["error"]
    assert says in answer["hint"]


def test_a_port_in_use_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["ui", "--port", str(port)])
    out = capsys.readouterr()
    assert code == 2 and "Pick another --port" in out.out + out.err
