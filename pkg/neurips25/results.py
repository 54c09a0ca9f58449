"""Stored results of sweeps too heavy for the notebook budget: ``notebooks/results/<slug>.json``.

Every stored number carries the command that produced it, the seed and the package version, so
"never a number without the code that produced it" holds for stored figures too.
"""
from __future__ import annotations

import json
import os
import platform
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["results_dir", "save_results", "load_results"]

_SLUG = re.compile(r"^[a-z0-9_]+$")


def results_dir() -> Path:
    """``$NEURIPS25_RESULTS`` or ``notebooks/results`` of the repository (found from the cwd upwards)."""
    env = os.environ.get("NEURIPS25_RESULTS")
    if env:
        return Path(env)
    here = Path.cwd().resolve()
    for p in (here, *here.parents):
        if (p / "notebooks").is_dir() and (p / "pkg").is_dir():
            return p / "notebooks" / "results"
        if p.name == "notebooks":
            return p / "results"
    return here / "results"


def _check_slug(slug: str) -> str:
    if not isinstance(slug, str) or not _SLUG.match(slug):
        raise ValueError(f"slug must match [a-z0-9_]+, got {slug!r}")
    return slug


def save_results(slug: str, data: dict[str, Any], command: str, seed: int, path: Path | None = None) -> Path:
    """Write ``data`` with provenance (command, seed, versions) to ``<results_dir>/<slug>.json``."""
    _check_slug(slug)
    if not isinstance(data, dict):
        raise TypeError(f"data must be a dict, got {type(data).__name__}")
    import torch

    from . import __version__

    payload = {
        "slug": slug,
        "command": command,
        "seed": seed,
        "neurips25": __version__,
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "data": data,
    }
    path = Path(path) if path else results_dir() / f"{slug}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")
    return path


def load_results(slug: str, path: Path | None = None) -> dict[str, Any]:
    """The stored payload for ``slug`` (``payload["data"]`` holds the numbers)."""
    _check_slug(slug)
    path = Path(path) if path else results_dir() / f"{slug}.json"
    if not path.exists():
        raise FileNotFoundError(f"no stored results for {slug!r} at {path}; regenerate with "
                                f"`python -m neurips25.{slug}`")
    return json.loads(path.read_text())
