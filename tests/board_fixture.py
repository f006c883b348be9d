"""Result records with known 95% intervals for the ranked board (unit and browser tests).

PrefEval mcq, accuracy. Intervals and the ranks Chatbot Arena's rule gives
(rank = 1 + rows whose lower bound is above this row's upper bound):

    alpha  0.80 [0.76, 0.84]  rank 1
    beta   0.78 [0.74, 0.82]  rank 1   (overlaps alpha)
    gamma  0.70 [0.66, 0.74]  rank 2   (alpha's lower bound 0.76 > 0.74; beta's 0.74 is not above 0.74)
    delta  0.50 [0.45, 0.55]  rank 4
    tiny-partial 0.90, 6 items: a partial run, listed after them, never ranked
"""

from __future__ import annotations

SUITE, TASK = "prefeval", "mcq"
EXPECTED_RANKS = {"alpha": 1, "beta": 1, "gamma": 2, "delta": 4}


def _stats(value, low, high, n):
    return {"accuracy": {"value": value, "ci95": [low, high], "n": n}}


def board_record(
    sid,
    model,
    value,
    low,
    high,
    n=1000,
    *,
    row_kind="computed",
    setting="zero_shot",
    parameters=None,
    license=None,
    model_type="generative",
    tier_n=None,
    protocol="generate_parse",  # PrefEval mcq's default (official) protocol
):
    tier_n = tier_n or n // 3
    model_facts = (
        None
        if parameters is None
        else {
            "name": model,
            "source": "hub",
            "revision": "0123456789abcdef0123456789abcdef01234567",
            "model_type": model_type,
            "license": license,
            "parameters": parameters,
        }
    )
    provenance = {
        "suite_version": "1",
        "split": {"name": "test", "sha256": "ab" * 32, "n_items": n, "full_n_items": 3000},
        "scorer_version": "1",
        "attempts": 1,
    }
    if model_facts:
        provenance.update({"model": model_facts, "protocol": protocol})
    return {
        "submission_id": sid,
        "suite": SUITE,
        "task": TASK,
        "setting": setting,
        "model_name": model,
        "model_link": f"https://example.org/{model}",
        "description": "",
        "row_kind": row_kind,
        "source": f"model run ({protocol})" if model_facts else "predictions file",
        "submitted_at": "2026-11-01T10:00:00.000+00:00",
        "provenance": provenance,
        "timings": {},
        "n_items": n,
        "metrics": {
            "metric": "accuracy",
            "total": _stats(value, low, high, n),
            "tiers": {
                "form": {
                    "explicit": _stats(value, low - 0.02, high + 0.02, tier_n),
                    "implicit_choice": _stats(value - 0.1, low - 0.12, high - 0.08, tier_n),
                }
            },
        },
    }


def board_records() -> list[dict]:
    return [
        board_record(
            "fx-alpha", "alpha", 0.80, 0.76, 0.84, parameters=7_000_000_000, license="apache-2.0"
        ),
        board_record("fx-beta", "beta", 0.78, 0.74, 0.82, parameters=135_000_000, license="mit"),
        board_record(
            "fx-gamma", "gamma", 0.70, 0.66, 0.74, parameters=70_000_000_000, license="llama3"
        ),
        board_record(
            "fx-delta", "delta", 0.50, 0.45, 0.55
        ),  # an uploaded predictions file: facts unknown
        board_record(
            "fx-partial",
            "tiny-partial",
            0.90,
            0.60,
            1.0,
            n=6,
            row_kind="partial",
            parameters=1_000_000,
            license="mit",
            tier_n=3,
        ),
    ]


def minimal_record(submission_id: str, value: float, n: int = 10) -> dict:
    """The smallest record the store takes: PrefEval mcq, zero_shot, one tier, no intervals (read-path
    and health tests, which need rows, not statistics)."""
    stats = {"accuracy": {"value": value, "ci95": [None, None], "n": n}}
    return {
        "submission_id": submission_id,
        "suite": SUITE,
        "task": TASK,
        "setting": "zero_shot",
        "model_name": f"model-{submission_id}",
        "model_link": "",
        "source": "predictions",
        "row_kind": "computed",
        "submitted_at": "2026-01-01T00:00:00+00:00",
        "metrics": {"metric": "accuracy", "total": stats, "tiers": {"form": {"explicit": stats}}},
    }


def finished_run(
    scored: int,
    kind: str = "model",
    limit: int | None = None,
    suite: str = SUITE,
    task: str = TASK,
):
    """A finished submission that scored `scored` items (its progress_total once it finished)."""
    from submissions.records import Submission

    return Submission(
        id="s1",
        created_at="2026-01-01T00:00:00+00:00",
        kind=kind,
        suite=suite,
        task=task,
        setting="zero_shot",
        model_name="m",
        state="finished",
        progress_done=scored,
        progress_total=scored,
        details={"limit": limit} if kind == "model" else None,
    )
