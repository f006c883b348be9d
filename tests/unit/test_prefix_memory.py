"""The transformers backend's shared-prefix path: peak memory no more than 1.2x that of reuse off
(64 prompts behind a 1,000-token prefix), with the same log-probabilities.

Each mode runs in a fresh process so that its peak resident memory (ru_maxrss) is its own. The
model is tiny in compute but has a wide KV (4 layers x 128 dims, no grouped heads), so a cache that
copied the prefix per prompt (the old path: 64 x 1,050 tokens x 4 KB = +275 MB) fails the bound.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[2]
PREFIX_TOKENS, N_PROMPTS = 1000, 64


def build_wide_kv_model(folder: Path) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    sys.path.insert(0, str(ROOT / "tests"))
    from tiny_models import build_tokenizer

    tokenizer = build_tokenizer()
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=4096,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def measure(folder: str, reuse: bool) -> dict:
    """Run in a child process: peak RSS of one choice_logprobs call over the workload."""
    import resource

    import torch

    from evaluator.backends import ModelSpec, load_backend

    torch.set_num_threads(1)
    backend = load_backend(
        ModelSpec("wide-kv", folder, "generative"), device="cpu", reuse_prefix=reuse
    )
    rng = np.random.default_rng(0)
    vocab = backend.model.config.vocab_size
    prefix = [int(x) for x in rng.integers(3, vocab, PREFIX_TOKENS)]
    prompts = [
        prefix + [int(x) for x in rng.integers(3, vocab, int(n))]
        for n in rng.integers(20, 80, N_PROMPTS)
    ]
    backend.choice_logprobs(
        [prompts[0][:50]], [5, 6]
    )  # warm-up: lazy allocations before the baseline
    with open("/proc/self/status") as status:
        before = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS"))
    logprobs = backend.choice_logprobs(prompts, [5, 6, 7])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"before": before, "peak": peak, "logprobs": logprobs.tolist()}


def run_child(folder: Path, reuse: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, __file__, str(folder), "1" if reuse else "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmRSS from /proc")
def test_prefix_reuse_peak_memory_within_1_2x_of_reuse_off(tmp_path):
    folder = build_wide_kv_model(tmp_path / "wide-kv")
    off = run_child(folder, reuse=False)
    on = run_child(folder, reuse=True)
    print(
        f"peak RSS reuse off {off['peak'] / 2**20:.0f} MB (+{(off['peak'] - off['before']) / 2**20:.0f}), "
        f"on {on['peak'] / 2**20:.0f} MB (+{(on['peak'] - on['before']) / 2**20:.0f})"
    )
    assert on["peak"] <= 1.2 * off["peak"]
    np.testing.assert_allclose(np.array(on["logprobs"]), np.array(off["logprobs"]), atol=1e-4)


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[1], sys.argv[2] == "1")))
