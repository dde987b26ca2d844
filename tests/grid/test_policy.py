from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rigwise.errors import InputError
from rigwise.grid.policy import evaluate, load_policy, policy_from_mapping


def test_default_policy_admits_a_workstation(make_facts: Any) -> None:
    facts = make_facts
    admission = evaluate(load_policy(), facts())
    assert admission.admitted
    assert admission.reasons == []


def test_every_failed_requirement_is_listed(make_facts: Any, make_gpus: Any) -> None:
    facts, gpu_facts = make_facts, make_gpus
    policy = policy_from_mapping(
        {
            "min_gpus": 1,
            "min_gpu_memory_bytes": 16e9,
            "min_measured_flops": 1e13,
            "min_disk_free_bytes": 1e12,
        },
        "test",
    )
    admission = evaluate(policy, facts(gpus=gpu_facts(1, 8e9)))
    assert not admission.admitted
    failed = {check.requirement for check in admission.checks if not check.passed}
    assert failed == {"gpu_memory", "measured_flops", "disk_free"}
    assert any("8 GB" in reason or "8.0 GB" in reason for reason in admission.reasons)
    assert len(admission.reasons) == 3


def test_measured_not_claimed_flops_decide(make_facts: Any) -> None:
    facts = make_facts
    policy = policy_from_mapping({"min_measured_flops": 1e12}, "test")
    assert not evaluate(policy, facts(measured_flops=9.9e11)).admitted
    assert evaluate(policy, facts(measured_flops=1e12)).admitted


def test_bad_policy_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("admission:\n  min_gpus: -1\n")
    with pytest.raises(InputError, match="invalid"):
        load_policy(path)
    with pytest.raises(InputError, match="does not exist"):
        load_policy(tmp_path / "missing.yaml")


def test_a_policy_file_with_aliases_or_binary_is_bad_input(tmp_path: Path) -> None:
    # before: yaml.safe_load expanded aliases; bytes that are not UTF-8 were exit 70
    bomb = tmp_path / "policy.yaml"
    bomb.write_text("a: &a [x, x, x]\nb: [*a, *a, *a]\n")
    with pytest.raises(InputError, match="aliases"):
        load_policy(bomb)
    bomb.write_bytes(b"min_vram: \xff\n")
    with pytest.raises(InputError, match="not UTF-8"):
        load_policy(bomb)


def test_a_bool_in_a_policy_file_is_no_number(tmp_path: Path) -> None:
    """Before: 'min_gpus: true' admitted nodes with one GPU (read as 1)."""
    path = tmp_path / "policy.yaml"
    path.write_text("admission:\n  min_gpus: true\n  min_cpu_cores: 4\n")
    with pytest.raises(InputError) as caught:
        load_policy(path)
    assert "key 'min_gpus' = True: Value error, true is not a number; give a number" in str(
        caught.value
    )


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"evil": 1}, "key 'evil' = 1: Extra inputs are not permitted"),
        ({"cpu_cores": "many"}, "key 'cpu_cores' = 'many'"),
        ({"cpu_cores": True}, "true is not a number"),
        ({"memory_bytes": float("nan")}, "not a number (NaN)"),
        ({"measured_flops": -1.0}, "key 'measured_flops' = -1.0: Input should be greater than"),
        ({"gpus": 5}, "key 'gpus' = 5: Input should be a valid list"),
        ({"gpus": [{"x": 1}]}, "key 'gpus.0.memory_bytes': Field required"),
        ({"hostname": "h" * 100_000}, "at most 253 characters"),
    ],
)
def test_join_facts_from_a_request_are_checked_key_by_key(
    make_facts: Any, change: dict[str, object], named: str
) -> None:
    # before: HTTP 500 for an unknown key, a string, a list of wrong GPUs or a missing key;
    # a bool count and a 100 kB hostname were stored
    from rigwise.grid.policy import facts_from_request

    with pytest.raises(InputError) as caught:
        facts_from_request({**make_facts().to_dict(), **change})
    assert caught.value.message.startswith("facts: ")
    assert named in caught.value.message
    assert facts_from_request(make_facts().to_dict()) == make_facts()  # probed facts pass


@pytest.mark.parametrize("text", ["bogus_key: 1\n", "- 1\n", "a: [\n"])
def test_grid_up_reads_the_policy_before_it_starts_anything(tmp_path: Path, text: str) -> None:
    # before: make_config took any --policy; GridService read it after `grid up` had started
    # the Ray head, which the error then left running
    from rigwise.grid.config import make_config

    policy = tmp_path / "policy.yaml"
    policy.write_text(text)
    with pytest.raises(InputError, match="Policy"):
        make_config(tmp_path / "grid", policy_file=policy)
    assert not (tmp_path / "grid").exists()
