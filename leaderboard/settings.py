"""The results store's configuration, read from the environment (this layer's only reader)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evaluator.settings import data_dir


@dataclass(frozen=True)
class LeaderboardSettings:
    data_dir: Path

    @property
    def store_dir(self) -> Path:
        """The results store: a folder laid out like a Hugging Face Hub dataset repository."""
        return self.data_dir / "results-dataset"


def load_leaderboard_settings() -> LeaderboardSettings:
    return LeaderboardSettings(data_dir=data_dir())
