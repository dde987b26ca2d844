"""`rigwise validate training DIR`: a folder without the published-run files says so."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from rigwise.cli import cli


def test_a_folder_without_the_files_says_no_rows_were_read(tmp_path: Path) -> None:
    # before: exit 0 and not one line printed (the folder held none of the files read)
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    result = CliRunner().invoke(cli, ["validate", "training", str(tmp_path)])
    assert result.exit_code == 0
    assert f"no training rows read from {tmp_path}" in result.stdout
