"""DeepRM's policy network: the image, a fully connected hidden layer (20 units), M + 1 logits.

DeepRM §4.1: "a neural network with a fully connected hidden layer with 20 neurons"; the
softmax of the output is the policy over ``{∅, 1..M}``. ``hidden`` gives more or wider layers.

Two ways to run the same network, equal up to float rounding (tested):

* `DeepRMPolicyNet.forward` takes images ``(N, T, W)`` or flat ``(N, T·W)`` — what the
  environment and the scheduler show;
* `DeepRMPolicyNet.forward_index` takes `dlsched.papers.deeprm.state.compact_index` rows. Every
  block of a DeepRM image is a "first ``k`` cells" prefix, so the first layer's ``W·x`` is a sum
  of ``T·d + M·d + 1`` entries of prefix sums of ``W`` (`prefix_table`), gathered with
  ``embedding_bag``: ~150 times fewer operations than the dense product, which is what makes an
  iteration of 100 jobsets × 20 episodes fit in seconds on two cores.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse
import torch
import torch.nn.functional as F
from torch import nn

from dlsched.papers.deeprm.state import DeepRMShape


class DeepRMPolicyNet(nn.Module):
    """Image → hidden ReLU layer(s) → ``M + 1`` logits.

    Args:
        shape: DeepRM state sizes (image size and number of actions).
        hidden: units per hidden layer; ``(20,)`` is the paper's network.
    """

    def __init__(self, shape: DeepRMShape | None = None, hidden: Sequence[int] = (20,)) -> None:
        super().__init__()
        self.shape = shape = shape or DeepRMShape()
        if not hidden or min(hidden) < 1:
            raise ValueError(f"DeepRMPolicyNet: hidden needs >= 1 layer of >= 1 unit, got {hidden}")
        self.hidden_sizes = tuple(int(h) for h in hidden)
        self.first = nn.Linear(shape.obs_dim, self.hidden_sizes[0])
        layers: list[nn.Module] = []
        for a, b in zip(self.hidden_sizes, self.hidden_sizes[1:], strict=False):
            layers += [nn.Linear(a, b), nn.ReLU()]
        self.rest = nn.Sequential(*layers, nn.Linear(self.hidden_sizes[-1], shape.num_actions))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Logits ``(N, M + 1)`` of images ``(N, T, W)`` or ``(N, T·W)``."""
        x = obs.reshape(obs.shape[0], -1)
        return self.rest(F.relu(self.first(x)))

    def prefix_table(self) -> torch.Tensor:
        """``(rows, H)`` prefix sums of the first layer's weights, in `compact_index`'s order."""
        s = self.shape
        t_len, r_len, m, d, h = s.horizon, s.res_slots, s.slots, s.num_res, self.hidden_sizes[0]
        w = self.first.weight.reshape(h, t_len, s.image_width)
        block = (1 + m) * r_len
        clusters = []
        slots = []
        for r in range(d):
            base = r * block
            c = torch.cumsum(w[:, :, base : base + r_len], dim=2)
            c = F.pad(c, (1, 0))  # (H, T, R + 1)
            clusters.append(c.permute(1, 2, 0))  # (T, R + 1, H)
            sl = w[:, :, base + r_len : base + block].reshape(h, t_len, m, r_len)
            sl = torch.cumsum(torch.cumsum(sl, dim=1), dim=3)
            sl = F.pad(sl, (1, 0, 0, 0, 1, 0))  # (H, T + 1, M, R + 1)
            slots.append(sl.permute(2, 1, 3, 0))  # (M, T + 1, R + 1, H)
        cluster = torch.stack(clusters, dim=1).reshape(-1, h)
        slot = torch.stack(slots, dim=1).reshape(-1, h)
        back = w[:, :, d * block :].reshape(h, -1)
        back = F.pad(torch.cumsum(back, dim=1), (1, 0)).t()
        return torch.cat([cluster, slot, back], dim=0)

    def forward_index(self, index: torch.Tensor, table: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``(N, M + 1)`` from `compact_index` rows ``(N, n)`` (int64).

        Args:
            index: table rows to sum per state.
            table: `prefix_table` computed beforehand (reuse it while weights do not change).
        """
        table = self.prefix_table() if table is None else table
        if index.is_cuda:  # IndexSum's backward runs on the CPU (SciPy)
            pre = F.embedding_bag(index, table, mode="sum") + self.first.bias
        else:
            pre = IndexSum.apply(index, table) + self.first.bias
        return self.rest(F.relu(pre))


class IndexSum(torch.autograd.Function):
    """``out[n] = Σ_j table[index[n, j]]`` (``embedding_bag`` sum) with a fast backward.

    Torch's ``embedding_bag`` backward sorts every index; here the gradient of the table is
    ``Aᵀ·grad`` with ``A`` the ``(N, rows)`` 0/1 matrix of the indices, one sparse product
    (each row of ``index`` holds distinct entries, as `compact_index` guarantees).
    """

    @staticmethod
    def forward(ctx: Any, index: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(index)
        ctx.rows = table.shape[0]
        return F.embedding_bag(index, table, mode="sum")

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, torch.Tensor]:
        (index,) = ctx.saved_tensors
        n, k = index.shape
        matrix = scipy.sparse.csr_matrix(
            (np.ones(n * k, np.float32), index.numpy().ravel(), np.arange(0, n * k + 1, k)),
            shape=(n, ctx.rows),
        )
        table_grad = matrix.T @ grad.detach().numpy()
        return None, torch.from_numpy(np.ascontiguousarray(table_grad, dtype=np.float32))
