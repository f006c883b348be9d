"""Queues by hardware: where a submission goes, and what a worker listens to."""

from __future__ import annotations

import pytest

from submissions.hardware import CPU_QUEUE, gpu_queue, route, worker_queues
from submissions.settings import QUEUE_NAME


def hub(parameters, model_type="generative"):
    return {"source": "hub", "parameters": parameters, "model_type": model_type}


def test_what_needs_the_web_node_stays_there():
    assert route("predictions", None) == QUEUE_NAME
    assert (
        route("model", {"source": "local", "parameters": 10, "model_type": "generative"})
        == QUEUE_NAME
    )


@pytest.mark.parametrize(
    "parameters, model_type, queue",
    [
        (135_000_000, "generative", CPU_QUEUE),
        (1_500_000_000, "generative", gpu_queue(24)),  # 1.5B bf16 ~3 GiB + headroom
        (1_500_000_000, "reward", CPU_QUEUE),  # one forward pass per response: CPU takes more
        (8_000_000_000, "generative", gpu_queue(24)),  # ~16.4 GiB + 6
        (14_000_000_000, "generative", gpu_queue(48)),
        (34_000_000_000, "generative", gpu_queue(80)),
        (70_000_000_000, "generative", gpu_queue(80)),  # larger than any class: the biggest tries
        (None, "generative", gpu_queue(80)),  # unknown size: the safe guess
    ],
)
def test_hub_models_by_size_and_type(parameters, model_type, queue):
    assert route("model", hub(parameters, model_type)) == queue


def test_a_cpu_worker_never_takes_a_gpu_job():
    assert worker_queues("cpu") == [CPU_QUEUE]
    assert not any("gpu" in q for q in worker_queues("cpu", web_node=True))
    assert worker_queues("gpu", 48) == [gpu_queue(48), gpu_queue(24)]  # largest it holds first
    assert worker_queues("gpu", 80)[0] == gpu_queue(80)
    with pytest.raises(ValueError):
        worker_queues("gpu")
    with pytest.raises(ValueError):
        worker_queues("gpu", 16)


def test_a_workers_queues_follow_its_image():
    from backend.processes import queues_for

    assert queues_for({}, remote=False) == [QUEUE_NAME, f"{QUEUE_NAME}:cpu"]  # make serve's workers
    assert queues_for({"PERSONABOARD_WORKER_HARDWARE": "web"}, remote=False) == [
        QUEUE_NAME
    ]  # the web image's
    gpu = {"PERSONABOARD_WORKER_HARDWARE": "gpu", "PERSONABOARD_GPU_MEMORY_GB": "80"}
    assert queues_for(gpu, remote=True) == [f"{QUEUE_NAME}:gpu-{g}g" for g in (80, 48, 24)]
    assert queues_for({**gpu, "PERSONABOARD_GPU_MEMORY_GB": "30"}, remote=False) == [
        QUEUE_NAME,
        f"{QUEUE_NAME}:gpu-24g",
    ]
    with pytest.raises(ValueError, match="web node's own queue"):
        queues_for({"PERSONABOARD_WORKER_HARDWARE": "web"}, remote=True)
    with pytest.raises(ValueError, match="smallest class"):
        queues_for({**gpu, "PERSONABOARD_GPU_MEMORY_GB": "16"}, remote=True)
