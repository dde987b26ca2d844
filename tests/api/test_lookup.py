"""``rigwise.api._lookup``: a cluster file stands alone; what is given beside it is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigwise.api.infer import plan_inference
from rigwise.api.train import plan_training
from rigwise.errors import InputError


@pytest.mark.parametrize(
    ("beside", "says"),
    [
        ({"on": "h100-sxm"}, "--on cannot be combined with --cluster"),
        ({"network": "10gbe"}, "--network cannot be combined with --cluster"),
        ({"nodes": 3, "network": "10gbe"}, "--nodes and --network cannot be combined"),
    ],
)
@pytest.mark.parametrize("planner", [plan_inference, plan_training])
def test_hardware_beside_a_cluster_file_is_bad_input(
    tmp_path: Path, planner: object, beside: dict[str, object], says: str
) -> None:
    # before: infer --on h100-sxm --cluster FILE planned the file's rtx-4090s (exit 0, --on
    # dropped); train --cluster FILE --network 10gbe said '2 nodes but no network between
    # them. Pass --network', the --network given dropped
    path = tmp_path / "cluster.yaml"
    path.write_text('nodes: [{on: "rtx-4090", count: 2}]\n')
    with pytest.raises(InputError, match=says):
        planner(model="llama-3.1-8b", cluster=str(path), **beside)  # type: ignore[operator]
    assert plan_inference(model="llama-3.1-8b", cluster=str(path), levers=False).fits
