"""bench/bench_gpu.py in its tiny CPU mode: the model is built on the meta device and materialised
in place, the workload runs through the backend, and the printed figures follow their formulas."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.model

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_gpu.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_gpu", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("reuse", [True, False])
def test_tiny_cpu_run_prints_tokens_per_s_mfu_and_floor_ratio(bench, capsys, reuse):
    argv = [
        "--tiny",
        "--device",
        "cpu",
        "--items",
        "12",
        "--personas",
        "3",
        "--profile-tokens",
        "80",
        "--question-tokens",
        "8",
        "--response-tokens",
        "12",
        "--peak-tflops",
        "0.05",
    ]
    result = bench.main(argv + ([] if reuse else ["--no-reuse"]))
    out = capsys.readouterr().out
    assert "tokens/s" in out and "MFU" in out and "ratio to floor" in out
    assert result["prompts"] == 24 and result["prompt_tokens"] == 24 * (80 + 8 + 24)
    assert result["finite"]
    n = result["non_embedding_params"]
    assert result["floor_s"] == pytest.approx(2 * n * result["prompt_tokens"] / 0.05e12)
    assert result["ratio_to_floor"] == pytest.approx(result["seconds"] / result["floor_s"])
    if reuse:  # each persona's profile computed once: 3 prefixes + every prompt's own tokens
        assert result["computed_tokens"] < result["prompt_tokens"]
    else:
        assert result["computed_tokens"] == result["prompt_tokens"]


def test_meta_built_model_matches_its_config(bench):
    import torch

    model = bench.build_model(bench.TINY, torch.device("cpu"), torch.float32)
    assert all(p.device.type == "cpu" and torch.isfinite(p).all() for p in model.parameters())
    assert model.config.num_hidden_layers == bench.TINY["num_hidden_layers"]
    assert (
        torch.isfinite(model.model.rotary_emb.inv_freq).all()
        and model.model.rotary_emb.inv_freq.abs().sum() > 0
    )
    assert bench.LLAMA3_8B["hidden_size"] == 4096 and bench.LLAMA3_8B["num_key_value_heads"] == 8
