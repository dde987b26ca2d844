"""lm-evaluation-harness over the tiny model: the scores lm-eval reports are checked against
the same model's log-likelihoods computed here, and against ``tinylm.perplexity``."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

pytest.importorskip("lm_eval")
pytest.importorskip("torch", minversion="2.0")  # a leftover torch/ folder has no version

from lm_eval.api.instance import Instance

from rigwise.errors import InputError, UnknownNameError
from rigwise.grid import harness, tinylm

# Pairs of phrases share a prefix: after "the grid " the model cannot know whether "trains"
# or "serves" follows, so rows offering both are coin flips and accuracy lands below 1.
SIBLINGS = {
    "the grid trains models": "the grid serves models",
    "the grid serves models": "the grid trains models",
    "a node joins the cluster": "a node leaves the cluster",
    "a node leaves the cluster": "a node joins the cluster",
}
PHRASES = [*SIBLINGS, "credits pay for every job", "datasets live in chunks"]


def phrase_corpus(count: int = 2500, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    return "".join(rng.choice(PHRASES) + ". " for _ in range(count)).encode()


def _window(rng: random.Random, phrase: str, start: int | None = None) -> str:
    start = rng.randrange(0, len(phrase) - 4) if start is None else start
    return phrase[start : start + rng.randrange(4, 8)]


def choice_rows(count: int = 40, seed: int = 1) -> list[dict[str, Any]]:
    """Context: a phrase's start; choices: its true next bytes, its sibling's next bytes (or
    a window of another phrase) and a window of another phrase; lengths vary, so acc and
    acc_norm can differ."""
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        phrase = rng.choice(PHRASES)
        cut = rng.randrange(4, len(phrase) - 8)
        true = _window(rng, phrase, cut)
        others = [p for p in PHRASES if p not in (phrase, SIBLINGS.get(phrase))]
        sibling = SIBLINGS.get(phrase)
        rival = _window(rng, sibling, cut) if sibling else _window(rng, rng.choice(others))
        choices = [true, rival, _window(rng, rng.choice(others))]
        if len(set(choices)) < 3:
            continue
        rng.shuffle(choices)
        rows.append({"context": phrase[:cut], "choices": choices, "label": choices.index(true)})
    return rows


@pytest.fixture(scope="module")
def weights() -> bytes:
    config = tinylm.TinyConfig(steps=250, checkpoint_every=10_000)
    result = tinylm.train(phrase_corpus(), config, None, lambda *_: None, lambda _: None)
    return bytes(result["weights"])


def _request(kind: Any, *arguments: Any) -> Instance:
    return Instance(request_type=kind, doc={}, arguments=arguments, idx=0)


def _argmax(values: list[float]) -> int:
    return max(range(len(values)), key=lambda i: (values[i], -i))  # first maximum, as numpy


def test_grid_task_accuracy_is_the_models_own_argmax(weights: bytes) -> None:
    rows = choice_rows()
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    scores = harness.run_tasks(weights, ["grid:mc"], {"grid:mc": data})["grid:mc"]
    lm = harness.harness_lm(weights)
    right = right_norm = 0
    for row in rows:
        requests = [_request("loglikelihood", row["context"], c) for c in row["choices"]]
        lls = [ll for ll, _ in lm.loglikelihood(requests)]
        right += _argmax(lls) == row["label"]
        normed = [ll / len(c) for ll, c in zip(lls, row["choices"], strict=True)]
        right_norm += _argmax(normed) == row["label"]
    assert scores["acc"] == pytest.approx(right / len(rows), abs=1e-12)
    assert scores["acc_norm"] == pytest.approx(right_norm / len(rows), abs=1e-12)
    assert 0.6 <= scores["acc"] < 1.0  # far above chance (1/3); the shared prefixes cost some
    assert set(scores) == {"acc", "acc_stderr", "acc_norm", "acc_norm_stderr"}
    assert scores["acc_stderr"] > 0


def test_rolling_loglikelihood_matches_perplexity(weights: bytes) -> None:
    text = phrase_corpus(40, seed=7).decode()
    _, config = tinylm.load(weights)
    lm = harness.harness_lm(weights)
    whole, prefix = lm.loglikelihood_rolling(
        [
            _request("loglikelihood_rolling", text),
            _request("loglikelihood_rolling", text[: config.context]),
        ]
    )
    # perplexity scores the bytes that have a full context: all but the first `context`
    scores = tinylm.perplexity(weights, text.encode())
    nll = math.log(scores["perplexity"]) * scores["tokens"]
    assert -(whole - prefix) == pytest.approx(nll, rel=1e-5)
    ((chained, _),) = lm.loglikelihood([_request("loglikelihood", "", text)])
    assert chained == pytest.approx(whole, rel=1e-6)


def test_greedy_generation_is_what_loglikelihood_calls_greedy(weights: bytes) -> None:
    lm = harness.harness_lm(weights)
    context = "a node joins "
    (text,) = lm.generate_until([_request("generate_until", context, {"max_gen_toks": 8})])
    assert len(text.encode()) == 8
    (_, greedy), (_, other) = lm.loglikelihood(
        [
            _request("loglikelihood", context, text),
            _request("loglikelihood", context, text[:-1] + "#"),
        ]
    )
    assert greedy and not other
    stop = text[3:5]
    (cut,) = lm.generate_until(
        [_request("generate_until", context, {"max_gen_toks": 8, "until": ["zzz", stop]})]
    )
    assert cut == text[: text.index(stop)] and stop not in cut


def test_unknown_and_malformed_tasks_are_named(weights: bytes) -> None:
    with pytest.raises(InputError, match=r"'grid:mc': line 2 has label 5"):
        harness.read_choice_rows(
            "grid:mc",
            b'{"context": "a", "choices": ["b", "c"], "label": 0}\n'
            b'{"context": "a", "choices": ["b", "c"], "label": 5}\n',
        )
    with pytest.raises(InputError, match="No data for task 'grid:gone'"):
        harness.run_tasks(weights, ["grid:gone"], {})


@pytest.mark.slow  # indexes lm-eval's ~14k task files (about 10-14 s here)
def test_an_unknown_registered_task_is_named_with_close_matches(weights: bytes) -> None:
    with pytest.raises(UnknownNameError, match="'hellaswg'") as caught:
        harness.run_tasks(weights, ["hellaswg"], {})
    assert "hellaswag" in (caught.value.hint or "")


def test_metrics_and_summary() -> None:
    raw = {
        "alias": "x",
        "acc,none": 0.5,
        "acc_stderr,none": "N/A",
        "exact_match,strict": 1,
        "f1,none": float("nan"),
        "sample_len": 9,
    }
    assert harness.numeric_metrics(raw) == {"acc": 0.5, "exact_match,strict": 1.0}
    scores = {"grid:mc": {"acc_stderr": 0.1, "acc": 0.75}, "gsm8k": {"exact_match,strict": 0.0}}
    assert harness.summary(scores) == "grid:mc acc 0.75; gsm8k exact_match,strict 0"
    assert harness.cut_at_stop("one. two\n", ["\n", "."]) == "one"
