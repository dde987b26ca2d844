"""Evaluate jobs with lm-eval tasks, end to end through the coordinator API and the scheduler
(test_api's inline engine runs the job bodies in this process, standing in for Ray)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

pytest.importorskip("lm_eval")
pytest.importorskip("torch", minversion="2.0")  # a leftover torch/ folder has no version

import test_api
from test_api import TRAIN, join, step_until_done

from rigwise.grid import harness
from rigwise.grid.db import JobRow

grid = test_api.grid  # the coordinator with its inline engine, as test_api builds it


def word_choices(corpus: bytes, count: int = 24, seed: int = 3) -> bytes:
    """A grid: task from the corpus itself: four words, then the true fifth word or two
    other words of the corpus."""
    words = corpus.decode().split()
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        at = rng.randrange(0, len(words) - 5)
        true = " " + words[at + 4]
        choices = [true, *(" " + rng.choice(words) for _ in range(2))]
        rng.shuffle(choices)
        row = {"context": " ".join(words[at : at + 4]), "choices": choices}
        lines.append(json.dumps({**row, "label": choices.index(true)}))
    return "\n".join(lines).encode()


def test_a_grid_task_is_scored_by_the_grid_and_shown_on_the_board(
    grid: Any, make_facts: Any, corpus: bytes
) -> None:
    service, _, client, admin = grid
    node = join(client, service, make_facts(), "worker")
    user = {"Authorization": f"Bearer {node['credential']}"}
    rows = word_choices(corpus)
    client.put("/api/data/mc", content=rows, headers=admin).raise_for_status()
    trained = client.post("/api/jobs", json={"job": TRAIN}, headers=user).json()
    model_id = step_until_done(service, client, user, trained["id"])["result"]["model_id"]
    route = f"/api/models/{model_id}/eval"

    refused = client.post(route, json={"dataset": "corpus", "tasks": ["grid:nope"]}, headers=user)
    assert refused.status_code == 400 and "'nope'" in refused.json()["error"]
    job_file = {"name": "e", "kind": "evaluate", "app": {"model": model_id, "dataset": "corpus"}}
    job_file["app"]["tasks"] = ["grid:nope"]  # a job file is checked the same way
    refused = client.post("/api/jobs", json={"job": job_file}, headers=user)
    assert refused.status_code == 400 and "'nope'" in refused.json()["error"]

    queued = client.post(route, json={"dataset": "corpus", "tasks": ["grid:mc"]}, headers=user)
    job = step_until_done(service, client, user, queued.json()["id"])
    assert job["state"] == "succeeded", job["reason"]
    with service.sessions() as session:
        spec = session.get(JobRow, job["id"]).spec
    assert "lm_eval" in spec["requires"] and spec["app"]["tasks"] == ["grid:mc"]
    scores = job["result"]["tasks"]["grid:mc"]
    assert 0.0 <= scores["acc"] <= 1.0 and "acc_norm" in scores

    # a later evaluation without tasks keeps the board's task scores
    again = client.post(route, json={"dataset": "corpus"}, headers=user).json()
    assert step_until_done(service, client, user, again["id"])["state"] == "succeeded"
    (entry,) = client.get("/api/models", headers=user).json()
    assert entry["tasks"] == {"grid:mc": scores}
    assert entry["rank"] == 1 and entry["perplexity"] == job["result"]["metrics"]["perplexity"]

    # what the board shows is what the model scores: the same weights, evaluated here
    weights = client.get(f"/api/data/model:{model_id}", headers=user).content
    assert harness.run_tasks(weights, ["grid:mc"], {"grid:mc": rows}) == {"grid:mc": scores}
