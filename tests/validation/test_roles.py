"""Every measurement file under validation/data states each row's role, and the loaders refuse
a file without it (issue 15: fit and independent rows are reported apart)."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from rigwise.errors import InputError
from rigwise.validation.inference_readers import default_directory, load_measurements
from rigwise.validation.stats import NOT_MEASUREMENTS, ROLES
from rigwise.validation.training import DATA_DIR, validate_training

DATA_ROOT = DATA_DIR.parent
MEASUREMENT_FILES = sorted(
    p for p in DATA_ROOT.rglob("*.csv") if p.parent != DATA_ROOT and p.name not in NOT_MEASUREMENTS
)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(line for line in handle if not line.startswith("#")))


def test_there_are_measurement_files_of_both_kinds() -> None:
    folders = {p.parent.name for p in MEASUREMENT_FILES}
    assert folders == {"inference", "training"} and len(MEASUREMENT_FILES) >= 14


@pytest.mark.parametrize("path", MEASUREMENT_FILES, ids=lambda p: p.name)
def test_every_row_has_a_role_and_every_fit_row_names_its_factor(path: Path) -> None:
    rows = _rows(path)
    assert rows, f"{path.name} has no rows"
    for row in rows:
        assert row.get("role") in ROLES, f"{path.name}: role {row.get('role')!r}"
        if row["role"] == "fit":
            factor = row.get("fit_factor", "")
            assert factor.startswith(("efficiency_", "engine_overheads", "engine_builds")), factor


def test_both_roles_exist_in_each_kind() -> None:
    for folder in ("inference", "training"):
        roles = {r["role"] for p in MEASUREMENT_FILES if p.parent.name == folder for r in _rows(p)}
        assert {"fit", "independent"} <= roles, folder


def test_a_source_both_fitted_and_checked_is_split_by_rows() -> None:
    # torchtitan: Tables 1 and 3 and the AsyncTP pairs set factors; Tables 2, 4-6 and the
    # Trainy/WhiteFiber H200 rows, the torchao float8 H100 rows, the 5 torchao B200 rows and
    # the 4 autoresearch Qwen3 14B B200 rows did not (efficiency_training.csv fitted_on).
    rows = _rows(DATA_DIR / "torchtitan_llama3_training_benchmarks.csv")
    fit = [r for r in rows if r["role"] == "fit"]
    assert len(fit) == 18 and len(rows) - len(fit) == 26
    assert {r["table"] for r in fit} == {"Table 1", "Table 3", "AsyncTP 70B", "AsyncTP 8B"}


def _copy_without_role(source: Path, target: Path) -> None:
    rows = _rows(source)
    fields = [f for f in rows[0] if f not in ("role", "fit_factor")]
    with target.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def test_the_inference_loader_refuses_a_file_without_roles(tmp_path: Path) -> None:
    name = "llamacpp_discussion15013_cuda_scoreboard_llama2_7b_q4_0.csv"
    _copy_without_role(default_directory() / name, tmp_path / name)
    with pytest.raises(InputError, match="no 'role' column") as caught:
        load_measurements(tmp_path)
    assert "fit_factor" in (caught.value.hint or "")


def test_the_training_loader_refuses_an_unknown_role(tmp_path: Path) -> None:
    name = "megatron_lm_2021_table1_weak_scaling.csv"
    shutil.copy(DATA_DIR / name, tmp_path / name)
    text = (tmp_path / name).read_text(encoding="utf-8").replace(",fit,", ",holdout,")
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="role 'holdout'"):
        validate_training(tmp_path)


def test_a_fit_row_without_its_factor_is_refused(tmp_path: Path) -> None:
    name = "korthikanti_2022_table4_per_layer_22B.csv"
    rows = _rows(DATA_DIR / name)
    rows[0]["fit_factor"] = ""
    with (tmp_path / name).open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(InputError, match="must name its factor"):
        validate_training(tmp_path)
