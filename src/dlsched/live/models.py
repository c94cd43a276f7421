"""Models, data and data order of live jobs, and the flat parameter vector they are sharded from.

Data: scikit-learn's 8×8 handwritten digits are not available offline here, so `digits_like`
generates a deterministic *synthetic* stand-in with torch: 10 classes of 8×8 images with pixel
values in [0, 16] (blurred random strokes per class plus per-sample jitter and noise), 1797
samples by default, scaled to [0, 1]. It is a real classification task (the models' loss falls),
but it is not the UCI/scikit-learn digits set.

Models (no batch normalisation or dropout, so a step's gradient does not depend on how the batch
is split over workers):

- ``cnn``: two 3×3 convolutions and two linear layers (~40 k parameters);
- ``mlp``: 64-256-256-10 perceptron (~85 k parameters);
- ``smooth``: 64-128-128-10 perceptron with tanh (~27 k parameters). Its gradient has no kinks,
  so float rounding differences (e.g. summing the workers' gradients in another order) stay
  ~1e-7 instead of being amplified when a ReLU or max-pool sits exactly on its kink; the
  correctness tests compare against plain PyTorch with it;
- ``large``: 64-2048-2048-2048-1024-10 perceptron (~10.6 M parameters, 42 MB in float32).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F


class DigitsCNN(nn.Module):
    """Small CNN for 1×8×8 images."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def _mlp(widths: list[int], act: type[nn.Module] = nn.ReLU) -> nn.Module:
    layers: list[nn.Module] = [nn.Flatten()]
    for i, (a, b) in enumerate(itertools.pairwise(widths)):
        layers.append(nn.Linear(a, b))
        if i < len(widths) - 2:
            layers.append(act())
    return nn.Sequential(*layers)


MODELS: dict[str, Callable[[], nn.Module]] = {
    "cnn": DigitsCNN,
    "mlp": lambda: _mlp([64, 256, 256, 10]),
    "smooth": lambda: _mlp([64, 128, 128, 10], nn.Tanh),
    "large": lambda: _mlp([64, 2048, 2048, 2048, 1024, 10]),
}


def build_model(name: str, seed: int) -> nn.Module:
    """The model ``name`` initialised from ``seed`` (same seed → same parameters everywhere)."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose from {sorted(MODELS)}")
    gen_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        return MODELS[name]()
    finally:
        torch.random.set_rng_state(gen_state)


def num_params(name: str) -> int:
    """Parameters of model ``name``."""
    return sum(p.numel() for p in build_model(name, 0).parameters())


def flat_init(name: str, seed: int) -> torch.Tensor:
    """Initial parameters of model ``name`` as one flat float32 vector (parameter order)."""
    model = build_model(name, seed)
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).float()


def digits_like(seed: int, n: int = 1797) -> tuple[torch.Tensor, torch.Tensor]:
    """Deterministic synthetic 8×8 "digits": images ``(n, 1, 8, 8)`` in [0, 1], labels ``(n,)``.

    This is generated, not the scikit-learn digits set (see the module docstring).
    """
    gen = torch.Generator().manual_seed(10_007 + seed)
    protos = torch.rand(10, 1, 12, 12, generator=gen)
    protos = F.avg_pool2d((protos > 0.6).float(), 3, stride=1)  # 10×1×10×10 blurred strokes
    labels = torch.arange(n) % 10
    labels = labels[torch.randperm(n, generator=gen)]
    dx = torch.randint(0, 3, (n,), generator=gen)
    dy = torch.randint(0, 3, (n,), generator=gen)
    images = torch.empty(n, 1, 8, 8)
    for i in range(n):
        y0, x0 = int(dy[i]), int(dx[i])
        images[i] = protos[labels[i], :, y0 : y0 + 8, x0 : x0 + 8]
    images = images + 0.15 * torch.randn(n, 1, 8, 8, generator=gen)
    images = (images.clamp(0, 1) * 16).round() / 16
    return images, labels


class DataOrder:
    """Fixed data order: step ``s`` trains on samples ``s*B .. (s+1)*B-1`` of a stream of
    seeded permutations of the dataset (one permutation per pass).

    Args:
        n: dataset size.
        total_batch: samples per step, B.
        seed: seeds the permutations.
    """

    def __init__(self, n: int, total_batch: int, seed: int) -> None:
        self.n = n
        self.total_batch = total_batch
        self.seed = seed
        self._perms: dict[int, torch.Tensor] = {}

    def _perm(self, epoch: int) -> torch.Tensor:
        if epoch not in self._perms:
            if len(self._perms) > 4:
                self._perms.clear()
            gen = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
            self._perms[epoch] = torch.randperm(self.n, generator=gen)
        return self._perms[epoch]

    def batch(self, step: int) -> torch.Tensor:
        """Dataset indices of the global batch of ``step`` (length B)."""
        first = step * self.total_batch
        idx = torch.arange(first, first + self.total_batch)
        out = torch.empty(self.total_batch, dtype=torch.long)
        for epoch in torch.unique(idx // self.n).tolist():
            mask = (idx // self.n) == epoch
            out[mask] = self._perm(int(epoch))[idx[mask] % self.n]
        return out


class FlatModel:
    """A model whose parameters and gradients are views into two flat float32 vectors.

    Writing ``params`` changes the model; ``backward`` fills ``grads``, so slices of it can be
    sent without copying.
    """

    def __init__(self, name: str, seed: int) -> None:
        self.model = build_model(name, seed)
        plist = list(self.model.parameters())
        total = sum(p.numel() for p in plist)
        self.params = torch.zeros(total)
        self.grads = torch.zeros(total)
        offset = 0
        self._views: list[tuple[nn.Parameter, torch.Tensor]] = []
        for p in plist:
            k = p.numel()
            view = self.params[offset : offset + k].view_as(p)
            view.copy_(p.detach())
            p.data = view
            gview = self.grads[offset : offset + k].view_as(p)
            p.grad = gview
            self._views.append((p, gview))
            offset += k

    def fresh_grads(self) -> None:
        """Point the gradients at a new buffer (the old one may still be queued for sending)."""
        self.grads = torch.zeros_like(self.grads)
        offset = 0
        views: list[tuple[nn.Parameter, torch.Tensor]] = []
        for p, _ in self._views:
            k = p.numel()
            gview = self.grads[offset : offset + k].view_as(p)
            p.grad = gview
            views.append((p, gview))
            offset += k
        self._views = views

    def loss_and_grad(self, x: torch.Tensor, y: torch.Tensor, denom: int) -> float:
        """Fill ``grads`` with ∇ (sum of cross-entropy over the samples) / ``denom``.

        Dividing by the *total* batch size makes the sum of the workers' gradients equal the
        gradient of the mean loss over the global batch, whatever the split.
        """
        self.grads.zero_()
        for p, gview in self._views:
            if p.grad is not gview:
                p.grad = gview
        loss = F.cross_entropy(self.model(x), y, reduction="sum") / denom
        loss.backward()
        for p, gview in self._views:
            if p.grad is not gview:  # autograd replaced the view: copy back
                gview.copy_(p.grad)  # type: ignore[arg-type]
                p.grad = gview
        return float(loss.detach())
