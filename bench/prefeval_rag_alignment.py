"""PrefEval's explicit-form RAG: does upstream's `msg_index` show the distractor texts it scored?

    .venv/bin/python bench/prefeval_rag_alignment.py                      # offline, bundled extract
    .venv/bin/python bench/prefeval_rag_alignment.py --official PREFEVAL  # from upstream's own files
    .venv/bin/python bench/prefeval_rag_alignment.py --extract PREFEVAL   # rewrite the extract

Upstream's explicit RAG (handle_rag_task_mcq / handle_rag_task, github.com/amazon-science/PrefEval
@ 50795054) ranks the first 2 + 2n sentences of `<topic>_overall300_topk_history.json`
(`sentence_scores`: 0 the preference, 1 the model's reply, 2.. the distractor messages of the
conversation) and shows a retrieved index k >= 2 as `msg_index_<topic>...json[str(k)]`. In a
topic whose msg_index is aligned, entry k is distractor message k - 2 of
`filtered_inter_turns.json` (all conversations concatenated, as the prompt holds them), as
"<role>: <text>". This script checks every entry the runs can retrieve (k = 2..601, up to 300
turns) against the distractor file this repository bundles (evaluator/suites/prefeval/data/, the
same file as upstream's), and counts the explicit items at 10, 70 and 300 turns whose top 5 shows
at least one text other than the conversation's message at its index.

Offline it reads tests/fixtures/prefeval_official/rag_alignment.json.gz: for each topic a 12-hex
SHA-256 prefix of each msg_index entry 2..601 and, for each row of the score file, the indices of
its top 5 at 10, 70 and 300 turns by upstream's rule (`sorted(scores[:2 + 2n], key=score,
reverse=True)[:5]`), or why the score file cannot be read; CC BY-NC 4.0 as the other PrefEval
data (that folder's LICENSE.txt). `--official` recomputes the same from upstream's files.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EXTRACT = ROOT / "tests" / "fixtures" / "prefeval_official" / "rag_alignment.json.gz"
COMMIT = "50795054b5ff5f418d2b768a331d71e480f93331"
TURNS = (10, 70, 300)
TOP_K = 5
ENTRIES = range(2, 2 + 2 * max(TURNS))  # the msg_index keys a run up to 300 turns can show


def fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def from_official(src: Path) -> dict:
    """The extract, computed from an upstream checkout (benchmark_dataset/rag_retrieval/...)."""
    folder = src / "benchmark_dataset" / "rag_retrieval" / "simcse_explicit_pref"
    topics = {}
    for index_file in sorted(folder.glob("msg_index_*_overall300_topk_history.json")):
        topic = index_file.name.removeprefix("msg_index_").removesuffix(
            "_overall300_topk_history.json"
        )
        msg_index = json.loads(index_file.read_text())
        entry: dict = {"msg_index": [fingerprint(msg_index[str(k)]) for k in ENTRIES]}
        try:
            rows = json.loads((folder / f"{topic}_overall300_topk_history.json").read_text())
        except json.JSONDecodeError as exc:  # upstream's own json.load fails the same way
            entry["scores"] = f"unreadable: {exc}"
            topics[topic] = entry
            continue
        entry["scores"] = "ok"
        entry["top5"] = {
            str(n): [
                [
                    i
                    for i, _ in sorted(
                        row["sentence_scores"][: 2 + 2 * n], key=lambda x: x[1], reverse=True
                    )[:TOP_K]
                ]
                for row in rows
            ]
            for n in TURNS
        }
        topics[topic] = entry
    return {
        "about": {
            "source": f"github.com/amazon-science/PrefEval @ {COMMIT}, benchmark_dataset/rag_retrieval/simcse_explicit_pref",
            "made_by": "bench/prefeval_rag_alignment.py --extract",
            "license": "CC BY-NC 4.0 (LICENSE.txt in this folder)",
            "msg_index": "sha256(text)[:12] of entries 2..601",
            "top5": "per score-file row, the top-5 sentence indices at 10, 70, 300 turns (upstream's sort)",
        },
        "topics": topics,
    }


def distractor_texts() -> list[str]:
    """Every distractor message as the conversation holds it, as upstream words passages."""
    from evaluator.suites.prefeval.mcq import _inter_turn_messages

    return [f"{role}: {content}" for role, content in _inter_turn_messages()]


def board_passages_are_the_conversation() -> str:
    """What the board's RAG ranks for an explicit item: its passages 2.. are the distractor
    messages in conversation order (evaluator/suites/prefeval/mcq.py rag_passages)."""
    from evaluator.registry import get_task
    from evaluator.suites.prefeval.mcq import rag_passages

    pub = next(
        item.public
        for item in get_task("prefeval", "mcq_turns").load_split().items
        if item.public["form"] == "explicit" and item.public["inter_turns"] == max(TURNS)
    )
    passages = rag_passages(pub, "a reply")
    assert passages[2:] == distractor_texts()[: 2 * max(TURNS)], "the board's passages moved"
    return pub["id"]


def report(extract: dict) -> dict:
    messages = distractor_texts()
    totals = {"topics": 0, "misaligned_topics": 0, "items": 0, "affected": {n: 0 for n in TURNS}}
    print(
        f"{'topic':34s} {'k-2':>5s} {'k':>5s} {'other':>5s}  first bad  rows  "
        + "  ".join(f"bad@{n}" for n in TURNS)
        + "  shown wrong@10 (not in the conversation)"
    )
    for topic, entry in sorted(extract["topics"].items()):
        index = dict(zip(ENTRIES, entry["msg_index"]))
        right = {k: index[k] == fingerprint(messages[k - 2]) for k in ENTRIES}
        same_k = sum(index[k] == fingerprint(messages[k]) for k in ENTRIES if k < len(messages))
        aligned = sum(right.values())
        first_bad = next((k for k in ENTRIES if not right[k]), None)
        totals["topics"] += 1
        totals["misaligned_topics"] += first_bad is not None
        line = (
            f"{topic:34s} {aligned:5d} {same_k:5d} {len(index) - aligned:5d}  {first_bad or '-':>9}"
        )
        if entry["scores"] != "ok":
            print(
                f"{line}  score file {entry['scores'][:60]} (upstream's RAG cannot run this topic)"
            )
            continue
        top5 = entry["top5"]
        rows = len(top5[str(TURNS[0])])
        totals["items"] += rows
        bad = {
            n: sum(any(k >= 2 and not right[k] for k in top) for top in top5[str(n)]) for n in TURNS
        }
        for n in TURNS:
            totals["affected"][n] += bad[n]
        window = {fingerprint(t) for t in messages[: 2 * TURNS[0]]}
        shown = [k for top in top5[str(TURNS[0])] for k in top if k >= 2 and not right[k]]
        outside = sum(index[k] not in window for k in shown)
        print(
            f"{line}  {rows:4d}  "
            + "  ".join(f"{bad[n]:6d}" for n in TURNS)
            + f"  {len(shown):6d} ({outside})"
        )
    print(
        f"\nmisaligned msg_index: {totals['misaligned_topics']} of {totals['topics']} topics. Explicit items "
        f"upstream's RAG can run (readable score files): {totals['items']}; of them shown at least one "
        "distractor text other than the conversation's message at its index: "
        + ", ".join(f"{totals['affected'][n]} at {n} turns" for n in TURNS)
    )
    item = board_passages_are_the_conversation()
    print(
        f"the board: passage k >= 2 of an explicit item is distractor message k - 2 of the conversation "
        f"(checked on {item}), ranked by the operator's retriever: upstream's aligned topics' reading"
    )
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--official", type=Path, help="an upstream checkout at " + COMMIT[:8])
    parser.add_argument(
        "--extract", type=Path, help="rewrite the bundled extract from this checkout"
    )
    args = parser.parse_args()
    if args.extract:
        data = json.dumps(from_official(args.extract), sort_keys=True, separators=(",", ":"))
        with gzip.GzipFile(EXTRACT, "wb", mtime=0) as stream:
            stream.write(data.encode())
        print(f"wrote {EXTRACT.relative_to(ROOT)} ({EXTRACT.stat().st_size} bytes)")
    extract = (
        from_official(args.official)
        if args.official
        else json.loads(gzip.decompress(EXTRACT.read_bytes()))
    )
    report(extract)


if __name__ == "__main__":
    main()
