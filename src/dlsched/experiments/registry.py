"""Named, seeded experiments that regenerate the papers' tables and figures.

Each experiment is a function ``run(out_dir: Path, *, full: bool = False) -> list[Path]`` that
writes CSV + PNG + Markdown into ``out_dir`` and returns the paths it wrote. ``full=False`` runs a
reduced size that fits a laptop and must say so in its Markdown; ``full=True`` the paper's size.
The names come from the plugins in `dlsched.plugins.PLUGINS`; an experiment's module is imported
only when it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dlsched.plugins import ExperimentEntry, plugins

__all__ = ["ExperimentEntry", "experiments", "run_experiment"]


def experiments() -> dict[str, ExperimentEntry]:
    """Every experiment by name, in plugin-table order (`dlsched.plugins.PLUGINS`)."""
    return {entry.name: entry for plugin in plugins() for entry in plugin.experiments}


def __getattr__(name: str) -> Any:
    """``EXPERIMENTS`` (the dict of `experiments`), kept for one release; built on access."""
    if name == "EXPERIMENTS":
        return experiments()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_experiment(name: str, out_dir: Path, *, full: bool = False) -> list[Path]:
    """Run experiment ``name`` into ``out_dir``; ValueError listing choices if unknown."""
    known = experiments()
    entry = known.get(name)
    if entry is None:
        raise ValueError(f"unknown experiment {name!r}; choose one of {', '.join(known)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = entry.function()(out_dir, full=full)
    return paths
