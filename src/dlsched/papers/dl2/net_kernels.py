"""Compiled incremental inference of DL2's `RowNet` (`dlsched.papers.dl2.network.NumpyPolicy`).

After one DL2 action only the acted row's input changes (and the global entries), so an action
costs one row through the row MLP and one product of the context with the context layers;
these kernels do that and the masked arg-max in one compiled call (numba, ``cache=True``).
Products run in float32 (the weights' bytes bound their speed: float64 is 2x slower); the
running sum of embeddings and the scores are float64.

The context (the mean of the present rows' embeddings ``h_i``) enters the network only through
linear layers, so only the sum of the ``h_i`` is kept, not each row's product with them.

Packing (made by `NumpyPolicy`): every weight in one float32 vector ``wflat``; ``meta`` int64
holds the sizes and offsets (the `M_*` positions, then per row layer ``in, out, w, b``).
Per-slot ``state`` ``(J + 1, 3 + emb)`` float64: row ``i < J`` is ``[h_i @ row head | h_i]``;
row ``J`` is ``[rows present, 0, 0 | Σ present h_i]``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit

from dlsched.kernel_cache import refresh

refresh(__file__)  # before any cached kernel loads: numba checks a kernel's own file only

M_J, M_RD, M_L, M_EMB, M_WIDTH, M_LAYERS = range(6)
M_HEAD, M_CTX, M_GLOB, M_CTXB, M_VOIDW, M_VOIDB = range(6, 12)
M_FIRST_LAYER = 12
_FAST = {"reassoc", "contract"}
"""Where the row layers' ``(in, out, w offset, b offset)`` start in ``meta``."""

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
W32 = F32
I64 = npt.NDArray[np.int64]


@njit(cache=True, fastmath=_FAST)
def update_row(obs: F32, row: int, wflat: W32, meta: I64, state: F64) -> None:
    """Recompute row ``row``'s entries from ``obs`` and keep the present rows' sum current."""
    rd, L, emb = meta[M_RD], meta[M_L], meta[M_EMB]
    J = meta[M_J]
    x = obs[row * rd : (row + 1) * rd].copy()
    for layer in range(meta[M_LAYERS]):
        base = M_FIRST_LAYER + 4 * layer
        n_in, n_out, w_off, b_off = meta[base], meta[base + 1], meta[base + 2], meta[base + 3]
        w = wflat[w_off : w_off + n_in * n_out].reshape((n_in, n_out))
        h = wflat[b_off : b_off + n_out].copy()
        for k in range(n_in):
            xk = x[k]
            if xk != 0.0:
                for j in range(n_out):
                    h[j] += xk * w[k, j]
        for j in range(n_out):  # every layer's output, the embedding's too, goes through ReLU
            if not h[j] > 0.0:
                h[j] = 0.0
        x = h
    head = meta[M_HEAD]
    for k in range(3):
        y = np.float32(0.0)
        for j in range(emb):
            y += x[j] * wflat[head + 3 * j + k]
        state[row, k] = y
    if obs[row * rd + L] > 0.0:  # a present row: its embedding is in the sum (float64)
        for j in range(emb):
            state[J, 3 + j] += np.float64(x[j]) - state[row, 3 + j]
    for j in range(emb):
        state[row, 3 + j] = x[j]


@njit(cache=True, fastmath=_FAST)
def scores(obs: F32, wflat: W32, meta: I64, state: F64, out: F64) -> None:
    """All ``3J + 1`` scores from ``state`` and ``obs``'s global entries into ``out``."""
    J, rd, emb = meta[M_J], meta[M_RD], meta[M_EMB]
    n = 3 + emb  # context → [3 row logits | void hidden]
    present = state[J, 0] if state[J, 0] > 1.0 else 1.0
    z = wflat[meta[M_CTXB] : meta[M_CTXB] + n].copy()
    ctx = wflat[meta[M_CTX] : meta[M_CTX] + emb * n].reshape((emb, n))
    for k in range(emb):
        c = np.float32(state[J, 3 + k] / present)
        if c != 0.0:
            for j in range(n):
                z[j] += c * ctx[k, j]
    g0, glob_w = J * rd, meta[M_GLOB]
    for g in range(obs.shape[0] - g0):
        gv = obs[g0 + g]
        if gv != 0.0:
            w = wflat[glob_w + g * n : glob_w + (g + 1) * n]
            for j in range(n):
                z[j] += gv * w[j]
    for i in range(J):
        for k in range(3):
            out[3 * i + k] = state[i, k] + np.float64(z[k])
    void_w = meta[M_VOIDW]
    v = np.float64(wflat[meta[M_VOIDB]])
    for j in range(emb):
        zj = z[3 + j]
        if zj > 0.0:
            v += np.float64(zj) * np.float64(wflat[void_w + j])
    out[3 * J] = v


@njit(cache=True)
def act(
    obs: F32, mask: npt.NDArray[np.bool_], row: int, wflat: W32, meta: I64, state: F64, out: F64
) -> int:
    """Update row ``row`` (-1: none), score every action into ``out``, return the legal arg-max
    (the first on ties, as `numpy.argmax`), -1 when nothing is legal."""
    if row >= 0:
        update_row(obs, row, wflat, meta, state)
    scores(obs, wflat, meta, state, out)
    best, arg = -np.inf, -1
    for a in range(out.shape[0]):
        if mask[a] and (arg < 0 or out[a] > best):
            best, arg = out[a], a
    return arg
