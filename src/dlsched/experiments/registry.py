"""Named, seeded experiments that regenerate the papers' tables and figures.

Each experiment is a function ``run(out_dir: Path, *, full: bool = False) -> list[Path]`` that
writes CSV + PNG + Markdown into ``out_dir`` and returns the paths it wrote. ``full=False`` runs a
reduced size that fits a laptop and must say so in its Markdown; ``full=True`` the paper's size.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ExperimentEntry:
    """A registered experiment: ``target`` is ``module:function``."""

    name: str
    target: str
    description: str

    def function(self) -> Callable[..., list[Path]]:
        module, _, attr = self.target.partition(":")
        fn: Callable[..., list[Path]] = getattr(importlib.import_module(module), attr)
        return fn


EXPERIMENTS: dict[str, ExperimentEntry] = {
    entry.name: entry
    for entry in (
        ExperimentEntry(
            "sched2-fragmentation",
            "dlsched.experiments.sched2_fragmentation:run",
            "SCED² Fig. 4: average server fragmentation over time, SIF/LRF/FIFO with packing",
        ),
        ExperimentEntry(
            "sched2",
            "dlsched.experiments.sched2:run",
            "SCED² Fig. 7-10 and Table III: shipped DQN policy vs SIF/DSIF/SAF/LRF/SPF/FIFO",
        ),
        ExperimentEntry(
            "deeprm",
            "dlsched.experiments.deeprm:run",
            "DeepRM Figs. 4-7: slowdown vs load, objectives at 130 %, learning curve, withholding",
        ),
        ExperimentEntry(
            "dl2",
            "dlsched.experiments.dl2:run",
            "DL2 Figs. 9, 10, 13-17 and Table 2: shipped policy vs baselines, training, ablations",
        ),
        ExperimentEntry(
            "pollux",
            "dlsched.experiments.pollux:run",
            "Pollux §5.3: avg JCT, 8 workloads × policies, and vs job load",
        ),
        ExperimentEntry(
            "kubeflow",
            "dlsched.experiments.kubeflow:run",
            "Kubeflow dynamic vs static scheduler on three workload mixes",
        ),
    )
}


def run_experiment(name: str, out_dir: Path, *, full: bool = False) -> list[Path]:
    """Run experiment ``name`` into ``out_dir``; ValueError listing choices if unknown."""
    entry = EXPERIMENTS.get(name)
    if entry is None:
        raise ValueError(f"unknown experiment {name!r}; choose one of {', '.join(EXPERIMENTS)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    return entry.function()(out_dir, full=full)
