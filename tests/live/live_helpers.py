"""Shared settings of the live tests: tiny models, few steps, short timeouts."""

from __future__ import annotations

import torch

from dlsched.live import JobConfig, reference_train

ATOL = 1e-5
"""Parameters may differ only by the order of float summation of the workers' gradients."""


def config(**overrides: object) -> JobConfig:
    base: dict[str, object] = {
        "model": "smooth",
        "total_batch": 24,
        "lr": 0.05,
        "momentum": 0.9,
        "seed": 3,
        "total_steps": 60,
        "block_size": 4096,
        "snapshot_every": 0,
        "step_sleep_s": 0.005,
        "round_timeout_s": 15.0,
    }
    base.update(overrides)
    return JobConfig(**base)  # type: ignore[arg-type]


def assert_matches_reference(params: torch.Tensor, cfg: JobConfig) -> None:
    ref, _ = reference_train(cfg, cfg.total_steps)
    diff = (params - ref).abs().max().item()
    assert diff < ATOL, f"parameters differ from the unscaled run by {diff:.3g}"
