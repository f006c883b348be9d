"""Engines kept warm across jobs: one loaded backend per (backend, model, revision), evicted by memory.

Loading an 8B model into vLLM takes minutes and its prefix cache is lost with it, so a worker that
runs jobs in its own process (submissions/worker.py) keeps what it loaded: the next job for the
same model and revision gets the same engine, warm. When a new engine would not fit the memory
budget, the least recently used ones are dropped first.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Callable

from evaluator.backends.base import Backend, ModelSpec
from evaluator.phases import LOADING, report_phase

log = logging.getLogger(__name__)

BUDGET_ENV = "PERSONABOARD_ENGINE_MEMORY_BYTES"


def default_budget() -> int:
    """The accelerator's memory where there is one (a vLLM engine reserves its share of it, so a
    second one evicts the first); else half the machine's memory shared among its workers."""
    if configured := os.environ.get(BUDGET_ENV):
        return int(configured)
    try:
        import torch

        if torch.cuda.is_available():
            return int(torch.cuda.mem_get_info()[1])
    except ImportError:
        pass
    workers = max(1, int(os.environ.get("PERSONABOARD_WORKERS", "2")))
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (2 * workers)


def weight_bytes(spec: ModelSpec) -> int:
    """A load's size before it happens: the model's weight files on disk."""
    folder = Path(spec.path)
    if not folder.is_dir():
        return 0
    return sum(
        p.stat().st_size
        for p in folder.iterdir()
        if p.suffix in (".safetensors", ".bin", ".gguf", ".pt") and p.is_file()
    )


def _default_loader(spec: ModelSpec, backend: str, **options) -> Backend:
    from evaluator.backends import load_backend

    return load_backend(spec, backend, **options)


class EnginePool:
    def __init__(
        self, budget_bytes: int | None = None, loader: Callable[..., Backend] = _default_loader
    ):
        self.budget_bytes = budget_bytes if budget_bytes is not None else default_budget()
        self._loader = loader
        self._engines: OrderedDict[tuple, tuple[Backend, int]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(spec: ModelSpec, backend: str) -> tuple:
        return (backend, spec.name, spec.revision, spec.path, spec.model_type, spec.gguf_file)

    def acquire(
        self, spec: ModelSpec, backend: str = "transformers", **options
    ) -> tuple[Backend, bool]:
        """The engine for this model and revision, and whether it was already loaded (warm)."""
        key = self.key(spec, backend)
        with self._lock:
            if key in self._engines:
                self._engines.move_to_end(key)
                return self._engines[key][0], True
            self._evict_until_fits(weight_bytes(spec))
            report_phase(LOADING)
            engine = self._loader(spec, backend, **options)
            self._engines[key] = (engine, engine.memory_bytes() or weight_bytes(spec))
            self._evict_until_fits(0, keep=key)
            return engine, False

    def loaded(self) -> list[tuple]:
        return list(self._engines)

    def held_bytes(self) -> int:
        return sum(size for _, size in self._engines.values())

    def _evict_until_fits(self, incoming: int, keep: tuple | None = None) -> None:
        while self._engines and self.held_bytes() + incoming > self.budget_bytes:
            victim = next((k for k in self._engines if k != keep), None)
            if victim is None:
                return  # only the engine just loaded is left: it runs, over budget or not
            engine, size = self._engines.pop(victim)
            log.info("evicting engine %s (%d MB) to make room", victim[1], size // 2**20)
            close = getattr(engine, "close", None)
            if close:
                close()
            del engine
            gc.collect()
            try:
                import torch

                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
            except ImportError:
                pass

    def clear(self) -> None:
        with self._lock:
            self._evict_until_fits(self.budget_bytes + 1)


_shared: EnginePool | None = None


def shared_pool() -> EnginePool:
    """This process's pool (a worker's engines live as long as the worker)."""
    global _shared
    if _shared is None:
        _shared = EnginePool()
    return _shared
