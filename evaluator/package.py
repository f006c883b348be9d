"""The installed personaboard package's version: what a result records and `personaboard evaluate`
prints, so that a re-run says whether it ran the same code."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("personaboard")
    except PackageNotFoundError:  # run from a source folder that was never installed
        return "unknown"
