"""`benchmarks/dl2_episode_pg.py`'s gradient statistics: signal² estimates ‖E g‖² without the
noise's bias (from the cross products of independent traces' gradients), noise² one trace's
gradient variance."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "dl2_episode_pg.py"


def _module() -> Any:
    spec = importlib.util.spec_from_file_location("dl2_episode_pg", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@given(st.integers(2, 6), st.floats(-3.0, 3.0), st.integers(0, 1000))
@settings(max_examples=25, deadline=None)
def test_identical_gradients_are_all_signal(traces: int, scale: float, seed: int) -> None:
    g = torch.randn(50, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * scale
    stats = _module().snr_stats([g.clone() for _ in range(traces)])
    assert abs(stats["signal2"] - float(g @ g)) <= 1e-9 * max(1.0, float(g @ g))
    assert stats["noise2"] <= 1e-12
    assert abs(stats["grad_norm"] - float(g.norm())) <= 1e-6 * max(1.0, float(g.norm()))


def test_pure_noise_has_no_signal_on_average_and_its_variance_as_noise() -> None:
    """Zero-mean gradients of variance 1 a coordinate (d = 200): the squared norm of their mean
    would be 200 / P; the estimate is 0 ± its spread, noise² is 200."""
    bench = _module()
    gen = torch.Generator().manual_seed(0)
    sig, noise = [], []
    for _ in range(400):
        stats = bench.snr_stats([torch.randn(200, generator=gen) for _ in range(4)])
        sig.append(stats["signal2"])
        noise.append(stats["noise2"])
    mean_sig = sum(sig) / len(sig)
    sd = (sum((s - mean_sig) ** 2 for s in sig) / (len(sig) - 1)) ** 0.5
    assert abs(mean_sig) < 4 * sd / len(sig) ** 0.5  # unbiased: not the naive 200 / 4 = 50
    assert abs(sum(noise) / len(noise) - 200.0) < 10.0
