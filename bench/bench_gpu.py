"""The service's model protocol at an 8B shape on the accelerator: tokens/s, MFU, ratio to the floor.

    .venv/bin/python bench/bench_gpu.py                      # Llama-3-8B shape, bf16, CUDA, 8,298 x 2 prompts
    .venv/bin/python bench/bench_gpu.py --tiny --items 48    # tiny shape on CPU (tests/unit/test_bench_gpu.py)

The model is Llama-3-8B's configuration with random weights, built on the meta device and
materialised straight on the target device (`to_empty`, then initialised there): no weights travel.
The workload has PersonaFeedback's size: 8,298 binary choices, each asked in both orders (16,596
prompts), each prompt = a persona profile shared by every item of that persona + the question and
the two responses. It runs the transformers backend's choice log-probabilities (length batching,
LM head on the last position, shared-prefix reuse), as a PersonaFeedback model run does.

Printed: prompt tokens and tokens actually computed (a reused prefix is computed once), seconds,
tokens/s, MFU = 2 * N * computed tokens / seconds / peak, and the ratio to the prefill FLOP floor

    floor_s = 2 * N * prompt_tokens / peak_flops

N = non-embedding parameters (the decoder's matmuls; the LM head runs on one position per prompt),
peak = the device's dense bf16 peak (table below, or --peak-tflops; on CPU a measured fp32 matmul
rate). Attention's own FLOPs are left out of the floor (a few % at these lengths), so the ratio is
conservative. Goal: within 2x of the floor.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluator.backends.base import ModelSpec  # noqa: E402
from evaluator.backends.hf_transformers import TransformersBackend  # noqa: E402

LLAMA3_8B = dict(
    vocab_size=128256,
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
    max_position_embeddings=8192,
    rope_theta=500000.0,
)
TINY = dict(
    vocab_size=512,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=4096,
)
# dense bf16 peak FLOP/s (no sparsity), from the vendors' data sheets
PEAK_TFLOPS = {"H100": 989.0, "H200": 989.0, "A100": 312.0, "L40S": 362.0, "A10": 125.0}


def build_model(shape: dict, device: torch.device, dtype: torch.dtype):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**shape, pad_token_id=0, tie_word_embeddings=False)
    with torch.device("meta"):
        model = LlamaForCausalLM(config).to(dtype)
    model = model.to_empty(device=device)
    generator = torch.Generator(device=device).manual_seed(0)
    with torch.no_grad():
        for name, tensor in model.named_parameters():
            if name.endswith("norm.weight"):
                tensor.fill_(1.0)
            else:
                tensor.normal_(0.0, 0.02, generator=generator)
    # the rotary embedding's buffers were left empty by to_empty: build it again on the device
    with torch.device(device):
        model.model.rotary_emb = type(model.model.rotary_emb)(config=model.config)
    return model.eval()


def workload(
    items: int,
    personas: int,
    profile_tokens: int,
    question_tokens: int,
    response_tokens: int,
    vocab: int,
    seed: int = 0,
) -> list[list[int]]:
    """Both orders of every item; items spread evenly over personas, each persona's profile shared."""
    rng = np.random.default_rng(seed)
    profiles = [list(map(int, rng.integers(3, vocab, profile_tokens))) for _ in range(personas)]
    prompts = []
    for i in range(items):
        profile = profiles[i % personas]
        question = list(map(int, rng.integers(3, vocab, question_tokens)))
        a, b = (list(map(int, rng.integers(3, vocab, response_tokens))) for _ in range(2))
        prompts += [profile + question + a + b, profile + question + b + a]
    return prompts


def peak_flops(device: torch.device, override: float | None) -> tuple[float, str]:
    if override:
        return override * 1e12, "given"
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        for key, tflops in PEAK_TFLOPS.items():
            if key in name:
                return tflops * 1e12, f"{name} data sheet"
        raise SystemExit(f"unknown device {name!r}: pass --peak-tflops")
    n = 1024  # CPU: what a large fp32 matmul reaches here (a practical, not a theoretical, peak)
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    started = time.perf_counter()
    for _ in range(10):
        a @ b
    return 10 * 2 * n**3 / (time.perf_counter() - started), "measured fp32 matmul"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiny", action="store_true", help="tiny shape (CPU smoke run)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--items", type=int, default=8298)
    parser.add_argument("--personas", type=int, default=None, help="default: items / 4")
    parser.add_argument("--profile-tokens", type=int, default=400)
    parser.add_argument("--question-tokens", type=int, default=40)
    parser.add_argument("--response-tokens", type=int, default=150)
    parser.add_argument("--max-batch-tokens", type=int, default=None)
    parser.add_argument("--no-reuse", action="store_true", help="turn shared-prefix reuse off")
    parser.add_argument("--peak-tflops", type=float, default=None)
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    shape = TINY if args.tiny else LLAMA3_8B
    started = time.perf_counter()
    model = build_model(shape, device, dtype)
    if device.type == "cuda":
        torch.cuda.synchronize()
    built_s = time.perf_counter() - started
    n_params = sum(
        p.numel()
        for name, p in model.named_parameters()
        if "embed_tokens" not in name and "lm_head" not in name
    )
    backend = TransformersBackend.around(
        model,
        ModelSpec("random-llama", "", "generative"),
        pad_id=0,
        max_batch_tokens=args.max_batch_tokens,
        reuse_prefix=not args.no_reuse,
    )
    prompts = workload(
        args.items,
        args.personas or max(1, args.items // 4),
        args.profile_tokens,
        args.question_tokens,
        args.response_tokens,
        shape["vocab_size"],
    )
    prompt_tokens = sum(map(len, prompts))
    computed = [0]

    def count(_n: int, tokens: int) -> None:
        computed[0] += tokens  # suffix tokens computed per batch

    backend.choice_logprobs(prompts[:2], [5, 6])  # warm-up (kernels, allocator)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    logprobs = backend.choice_logprobs(prompts, [5, 6], count)
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    groups = __import__(
        "evaluator.backends.hf_transformers", fromlist=["group_by_shared_prefix"]
    ).group_by_shared_prefix(prompts)
    prefix_tokens = sum(len(g.prefix) for g in groups) if not args.no_reuse else 0
    computed_tokens = computed[0] + prefix_tokens
    peak, peak_source = peak_flops(device, args.peak_tflops)
    floor_s = 2 * n_params * prompt_tokens / peak
    result = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "shape": "tiny" if args.tiny else "Llama-3-8B",
        "dtype": str(dtype).removeprefix("torch."),
        "non_embedding_params": n_params,
        "build_s": built_s,
        "prompts": len(prompts),
        "prompt_tokens": prompt_tokens,
        "computed_tokens": computed_tokens,
        "seconds": seconds,
        "tokens_per_s": prompt_tokens / seconds,
        "mfu": 2 * n_params * computed_tokens / seconds / peak,
        "peak_tflops": peak / 1e12,
        "peak_source": peak_source,
        "floor_s": floor_s,
        "ratio_to_floor": seconds / floor_s,
        "finite": bool(np.isfinite(logprobs).all()),
    }
    if device.type == "cuda":
        result["peak_memory_gib"] = torch.cuda.max_memory_allocated(device) / 2**30
    print(
        f"{result['shape']} ({n_params / 1e6:.2f}M non-embedding params, {result['dtype']}) on {result['device']}, "
        f"built in {built_s:.1f} s"
    )
    print(
        f"{len(prompts)} prompts, {prompt_tokens} prompt tokens, {computed_tokens} computed "
        f"({'prefix reuse on' if not args.no_reuse else 'reuse off'}), {seconds:.2f} s"
    )
    print(
        f"tokens/s {result['tokens_per_s']:.0f}  MFU {result['mfu']:.3f} (peak {peak / 1e12:.1f} TFLOP/s, {peak_source})"
    )
    print(
        f"floor 2*N*tokens/peak = {floor_s:.2f} s; ratio to floor {result['ratio_to_floor']:.2f}x (goal <= 2x)"
    )
    return result


if __name__ == "__main__":
    main()
