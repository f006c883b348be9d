"""Which results store this process uses, and its outbox: the one place that chooses."""

from __future__ import annotations

from leaderboard.outbox import OnPublished, Outbox, Withhold
from leaderboard.settings import LeaderboardSettings, load_leaderboard_settings
from leaderboard.store import LocalDatasetStore, ResultsStore, StoreError


def configuration_problem(settings: LeaderboardSettings | None = None) -> str | None:
    """Why the configured results store cannot work, or None. Offline mode (HF_HUB_OFFLINE) is for
    a local results folder only: with a Hub results repo every publish would fail."""
    settings = settings or load_leaderboard_settings()
    if not settings.results_repo:
        return None
    if not settings.hub_token:
        return (
            "PERSONABOARD_RESULTS_REPO is set but no token is: set PERSONABOARD_HUB_TOKEN (or HF_TOKEN) "
            "to a token that can write to it"
        )
    import huggingface_hub.constants

    if huggingface_hub.constants.HF_HUB_OFFLINE:
        return (
            f"PERSONABOARD_RESULTS_REPO={settings.results_repo} publishes to the Hub, but HF_HUB_OFFLINE is on: "
            "unset HF_HUB_OFFLINE (offline mode is only for a local results folder)"
        )
    return None


def open_store(settings: LeaderboardSettings | None = None, head_signal=None) -> ResultsStore:
    """The Hub store when PERSONABOARD_RESULTS_REPO is set (a token is required), else the local folder.

    head_signal (leaderboard/head_signal.py, given by whoever knows the Redis URL): the Hub store's
    publishes are seen by other processes at once and theirs by it; the local store has no need of it
    (its head is a file every process reads)."""
    settings = settings or load_leaderboard_settings()
    if not settings.results_repo:
        return LocalDatasetStore(settings.store_dir)
    if problem := configuration_problem(settings):
        raise StoreError(problem)
    from evaluator.hub import DatasetRepo
    from leaderboard.hub_store import HubDatasetStore

    repo = DatasetRepo(
        settings.results_repo, settings.hub_token, settings.hub_endpoint, settings.hub_cache_dir
    )
    return HubDatasetStore(repo, private=settings.results_private, head_signal=head_signal)


def open_outbox(
    store=None,
    settings: LeaderboardSettings | None = None,
    on_published: OnPublished | None = None,
    head_signal=None,
    withhold: Withhold | None = None,
) -> Outbox:
    settings = settings or load_leaderboard_settings()
    return Outbox(
        settings.outbox_dir,
        store if store is not None else open_store(settings, head_signal),
        on_published,
        withhold,
        settings.boards_every_s,
    )
