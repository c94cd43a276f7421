"""The same training in one plain PyTorch process: the ground truth for correctness tests and
the baseline of the runtime's overhead benchmark."""

from __future__ import annotations

import time

import torch

from dlsched.live.config import JobConfig
from dlsched.live.models import DataOrder, FlatModel, digits_like


def reference_train(config: JobConfig, steps: int) -> tuple[torch.Tensor, float]:
    """Train ``config.model`` for ``steps`` full-batch SGD steps in this process.

    Uses the same initialisation, data order, loss scaling and SGD-with-momentum update as the
    PS (``m ← μ·m + g``, ``p ← p − lr·m``, ``m`` starting at the first gradient), so the result
    differs from a live run only by the order in which the workers' gradients are summed.

    Returns:
        (flat parameters after ``steps`` steps, seconds spent in the training loop).
    """
    net = FlatModel(config.model, config.seed)
    images, labels = digits_like(config.seed, config.dataset_size)
    order = DataOrder(config.dataset_size, config.total_batch, config.seed)
    momentum: torch.Tensor | None = None
    mu, lr = config.momentum, config.lr
    t0 = time.perf_counter()
    for step in range(steps):
        idx = order.batch(step)
        net.loss_and_grad(images[idx], labels[idx], config.total_batch)
        g = net.grads
        if mu:
            momentum = g.clone() if momentum is None else momentum.mul(mu).add_(g)
            update = momentum
        else:
            update = g
        with torch.no_grad():
            net.params.add_(update, alpha=-lr)
    return net.params.clone(), time.perf_counter() - t0
