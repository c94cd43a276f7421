"""Models, synthetic data, data order, flat gradients, block files and the reference trainer."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from dlsched.live import JobConfig, reference_train
from dlsched.live.assignment import shard
from dlsched.live.checkpoint import read_blocks, read_files, write_blocks
from dlsched.live.models import DataOrder, FlatModel, digits_like, num_params


def test_model_sizes() -> None:
    assert num_params("cnn") < 100_000
    assert num_params("mlp") < 200_000
    assert num_params("large") >= 10_000_000


def test_synthetic_digits_are_deterministic_and_balanced() -> None:
    x1, y1 = digits_like(0)
    x2, y2 = digits_like(0)
    assert torch.equal(x1, x2) and torch.equal(y1, y2)
    assert x1.shape == (1797, 1, 8, 8) and float(x1.min()) >= 0 and float(x1.max()) <= 1
    counts = torch.bincount(y1, minlength=10)
    assert int(counts.max() - counts.min()) <= 1
    assert not torch.equal(digits_like(1)[0], x1)


def test_data_order_is_a_stream_of_permutations() -> None:
    order = DataOrder(100, 30, seed=5)
    stream = torch.cat([order.batch(s) for s in range(10)])  # 300 = 3 passes
    for p in range(3):
        assert sorted(stream[p * 100 : (p + 1) * 100].tolist()) == list(range(100))
    assert torch.equal(DataOrder(100, 30, seed=5).batch(7), order.batch(7))


@pytest.mark.parametrize("model", ["cnn", "mlp", "smooth"])
def test_worker_gradients_sum_to_the_full_batch_gradient(model: str) -> None:
    net = FlatModel(model, seed=1)
    x, y = digits_like(1, 64)
    net.loss_and_grad(x, y, 64)
    full = net.grads.clone()
    total = torch.zeros_like(full)
    for r in range(3):
        s, e = shard(64, 3, r)
        net.fresh_grads()
        net.loss_and_grad(x[s:e], y[s:e], 64)
        total += net.grads
    assert torch.allclose(total, full, atol=1e-6)


def test_block_files_round_trip(tmp_path: Path) -> None:
    a = {0: (torch.arange(5.0), None), 2: (torch.ones(3), torch.full((3,), 2.0))}
    b = {1: (torch.zeros(4), torch.ones(4))}
    write_blocks(tmp_path / "ps0.blk", 7, a)
    write_blocks(tmp_path / "ps1.blk", 7, b)
    version, shard_a = read_blocks(tmp_path / "ps0.blk")
    assert version == 7 and torch.equal(shard_a[2][1], torch.full((3,), 2.0))  # type: ignore[arg-type]
    got = read_files([tmp_path / "ps0.blk", tmp_path / "ps1.blk"], [1, 2])
    assert sorted(got) == [1, 2] and torch.equal(got[1][0], torch.zeros(4))
    with pytest.raises(ValueError, match="missing"):
        read_files([tmp_path / "ps1.blk"], [0])
    (tmp_path / "bad.blk").write_bytes(b"garbage")
    with pytest.raises(ValueError):
        read_blocks(tmp_path / "bad.blk")


def test_reference_training_learns_and_is_deterministic() -> None:
    cfg = JobConfig(model="smooth", total_batch=32, lr=0.1, seed=2)
    p1, _ = reference_train(cfg, 30)
    p2, _ = reference_train(cfg, 30)
    assert torch.equal(p1, p2)
    net = FlatModel("smooth", 2)
    x, y = digits_like(2)
    before = net.loss_and_grad(x, y, len(y))
    net.params.copy_(p1)
    after = net.loss_and_grad(x, y, len(y))
    assert after < before
