"""Queues by hardware, and which queue a submission goes to.

    personaboard              the web node's own queue: anything that needs its disk (an uploaded
                              predictions file, a model the operator registered on that machine)
    personaboard:cpu          Hub models small enough for CPU inference (transformers)
    personaboard:gpu-24g      Hub models that need a GPU, by the memory they need (24, 48, 80 GiB)
    personaboard:gpu-48g
    personaboard:gpu-80g

A worker listens only to the queues its hardware can serve (`worker_queues`): a CPU worker never
sees a GPU job, and a GPU worker takes the classes its memory holds, largest first. The web node's
own workers (`make serve`) listen to its queue and the CPU queue, so one machine runs everything
that fits it; GPU jobs wait for a GPU worker (visible in /api/v1/workers and in the job's queue).

Why uploads stay home: a predictions file lives on the web node's disk; rather than shipping its
bytes through Redis, scoring it (CPU, seconds) stays on the web node's queue. Only Hub models, which
any machine can download at their pinned commit, travel to other machines.
"""

from __future__ import annotations

from submissions.settings import QUEUE_NAME

CPU_QUEUE = f"{QUEUE_NAME}:cpu"
GPU_CLASSES_GIB = (24, 48, 80)
# Largest models run on CPU (transformers): a generative model decodes token by token, a reward
# model needs one forward pass per response, so it can be larger.
CPU_MAX_PARAMETERS = {"generative": 1_000_000_000, "reward": 2_000_000_000}
BYTES_PER_PARAMETER = 2  # bf16 weights
# room beside the weights: activations, the KV cache of generation (vLLM takes what it is given)
HEADROOM_GIB = {"generative": 6.0, "reward": 2.0}


def gpu_queue(gib: int) -> str:
    return f"{QUEUE_NAME}:gpu-{gib}g"


def needed_gib(parameters: int, model_type: str) -> float:
    return parameters * BYTES_PER_PARAMETER * 1.1 / 2**30 + HEADROOM_GIB.get(model_type, 6.0)


def route(kind: str, model: dict | None) -> str:
    """The queue for a submission: its kind ("predictions" | "model") and resolved model (as a dict)."""
    if kind != "model" or not model or model.get("source") != "hub":
        return QUEUE_NAME  # needs the web node's disk
    model_type = model.get("model_type") or "generative"
    parameters = model.get("parameters")
    if (
        parameters is None
    ):  # unknown size (no safetensors metadata): the largest class is the safe guess
        return gpu_queue(GPU_CLASSES_GIB[-1])
    if parameters <= CPU_MAX_PARAMETERS.get(model_type, CPU_MAX_PARAMETERS["generative"]):
        return CPU_QUEUE
    need = needed_gib(parameters, model_type)
    for gib in GPU_CLASSES_GIB:
        if need <= gib:
            return gpu_queue(gib)
    return gpu_queue(GPU_CLASSES_GIB[-1])  # larger than any class: the biggest GPU worker tries


def worker_queues(
    hardware: str, gpu_memory_gib: int | None = None, web_node: bool = False
) -> list[str]:
    """The queues a worker on this hardware listens to, in priority order ("web": the web node's
    own queue only, e.g. a worker in the web image, which has no torch)."""
    if hardware == "web":
        return [QUEUE_NAME]
    if hardware == "cpu":
        queues = [CPU_QUEUE]
    elif hardware == "gpu":
        if not gpu_memory_gib:
            raise ValueError("a GPU worker needs its GPU memory in GiB (e.g. --gpu-memory-gb 80)")
        fitting = [gib for gib in GPU_CLASSES_GIB if gib <= gpu_memory_gib]
        if not fitting:
            raise ValueError(
                f"no GPU queue fits {gpu_memory_gib} GiB (the smallest class is {GPU_CLASSES_GIB[0]} GiB)"
            )
        queues = [gpu_queue(gib) for gib in reversed(fitting)]
    else:
        raise ValueError(f"hardware must be web, cpu or gpu, not {hardware!r}")
    return ([QUEUE_NAME] if web_node else []) + queues


ALL_QUEUES = [QUEUE_NAME, CPU_QUEUE, *(gpu_queue(g) for g in GPU_CLASSES_GIB)]
