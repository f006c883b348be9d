"""The results store's configuration, read from the environment (this layer's only reader).

PERSONABOARD_RESULTS_REPO=ORG/NAME (with a token in PERSONABOARD_HUB_TOKEN or HF_TOKEN) puts the
results on the Hub; unset, they stay in the local folder DATA_DIR/results-dataset (the default).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from evaluator.settings import data_dir
from leaderboard.boards import BOARDS_EVERY_S


@dataclass(frozen=True)
class LeaderboardSettings:
    data_dir: Path
    results_repo: str | None = None  # ORG/NAME of the Hub dataset; None: the local folder
    hub_token: str | None = None
    hub_endpoint: str | None = None  # HF_ENDPOINT (a mirror, or the tests' local Hub server)
    results_private: bool = False
    boards_every_s: float = (
        BOARDS_EVERY_S  # how far the dataset's boards may lag (leaderboard/boards.py)
    )

    @property
    def store_dir(self) -> Path:
        """The local results store: a folder laid out like a Hugging Face Hub dataset repository."""
        return self.data_dir / "results-dataset"

    @property
    def outbox_dir(self) -> Path:
        """Publishes waiting to go out (leaderboard/outbox.py)."""
        return self.data_dir / "outbox"

    @property
    def hub_cache_dir(self) -> Path:
        return self.data_dir / "hub-cache"


def load_leaderboard_settings() -> LeaderboardSettings:
    env = os.environ
    return LeaderboardSettings(
        data_dir=data_dir(),
        results_repo=(env.get("PERSONABOARD_RESULTS_REPO") or "").strip() or None,
        hub_token=env.get("PERSONABOARD_HUB_TOKEN") or env.get("HF_TOKEN") or None,
        hub_endpoint=(env.get("HF_ENDPOINT") or "").rstrip("/") or None,
        results_private=env.get("PERSONABOARD_RESULTS_PRIVATE", "").lower() in ("1", "true", "yes"),
        boards_every_s=float(env.get("PERSONABOARD_BOARDS_EVERY_S") or BOARDS_EVERY_S),
    )
