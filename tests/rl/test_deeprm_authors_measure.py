"""The authors' DeepRM setting (`hongzimao/deeprm`): their test measure, the slowdown of the
jobs started before the arrivals stop (``slow_down_cdf.launch`` with ``end='no_new_job'``), beside
ours (every job, run to its end), in `benchmarks/deeprm_authors_setting.py`; and their job sizes
in the training config (``demands="code"``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "deeprm_authors_setting.py"


def _both_measures():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("deeprm_authors_setting", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.both_measures


def test_jobs_started_after_the_cutoff_are_left_out_of_the_authors_measure() -> None:
    both_measures = _both_measures()
    arrival = np.array([0.0, 10.0, 40.0, 48.0])
    start = np.array([0.0, 20.0, 60.0, 49.0])  # the third starts after step 50
    length = np.array([2.0, 10.0, 10.0, 1.0])
    full, authors, left_out = both_measures(arrival, start, length, 50.0)
    slowdowns = np.array([1.0, 2.0, 3.0, 2.0])
    assert full == pytest.approx(slowdowns.mean())
    assert authors == pytest.approx(slowdowns[[0, 1, 3]].mean())
    assert left_out == pytest.approx(0.25)


def test_a_job_never_started_voids_the_full_measure_only() -> None:
    both_measures = _both_measures()
    full, authors, left_out = both_measures(
        np.array([0.0, 1.0]), np.array([0.0, -1.0]), np.array([3.0, 3.0]), 50.0
    )
    assert np.isnan(full) and authors == pytest.approx(1.0) and left_out == pytest.approx(0.5)


def test_training_config_draws_the_code_demands_when_asked() -> None:
    from dlsched.papers.deeprm.config import ReinforceConfig
    from dlsched.papers.deeprm.train import ValidationSet

    text = ReinforceConfig(load=1.9).training_jobsets([0])[0]
    code_config = ReinforceConfig(load=1.9, demands="code")
    code = code_config.training_jobsets([0])[0]
    assert code.demand.max(1).min() >= 10 and (code.demand % 2 == 0).all()
    assert text.demand.max(1).max() <= 10
    assert len(code) < 0.75 * len(text)  # half the jobs a step (50 steps: ~52 against ~103)
    validation = ValidationSet.build(code_config, per_point=2)
    assert validation.jobsets[0].demand.max(1).min() >= 10
