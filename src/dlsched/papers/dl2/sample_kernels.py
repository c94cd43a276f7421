"""The DL2 paper collector's per-action choice (`dlsched.papers.dl2.paper_collect.Collector`):
one draw from the policy's distribution per environment, then DL2's job-aware exploration (§4.3).

Given, per environment ``b``, the policy's logits over the ``3J + 1`` actions, the legal ones
(``mask``; illegal actions get probability 0, as `masked_logits` then softmax) and three
uniforms in [0, 1):

* ``u[0, b]``: the policy's action by the inverse CDF: the first action whose running sum of
  ``exp(logit − max)`` (`policy_cdf`, float64) exceeds ``u[0, b]`` × the row's total
  (`inverse_cdf`): the softmax's distribution, without normalising;
* ``u[1, b] < epsilon``: the environment explores if some job is in a poor state (workers
  without PS, PS without workers, a worker:PS ratio beyond 10, as `Dl2Slot.poor_state_fixes`);
* ``u[2, b]``: which of the legal fixes, uniformly (fixes in action order, the
  ``⌊u[2, b] × n⌋``-th of ``n``).

`choose_actions` is compiled (numba, ``cache=True``): the same work in NumPy is ~15 small
array operations an action, about a tenth of the collector's time at 64 environments.
`choose_actions_numpy` is the NumPy path, kept and tested equal to it
(`tests/rl/test_dl2_collector.py`).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from numba import njit

from dlsched.kernel_cache import refresh
from dlsched.papers.dl2 import slot_kernels as sk

refresh(__file__)  # before any cached kernel loads: numba checks a kernel's own file only


def inverse_cdf(cdf: npt.NDArray[np.float64], u: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """One draw per row from the categorical distributions whose running sums are ``cdf``
    ``(B, K)`` (unnormalised, non-decreasing), given one uniform ``u`` in [0, 1) per row: the
    first index whose running sum exceeds ``u`` × the row's total. An index of probability 0
    is never drawn; where rounding puts ``u`` × total at the total, the row's last index of
    positive probability."""
    x = u * cdf[:, -1]
    out = (cdf <= x[:, None]).sum(axis=1)
    over = np.flatnonzero(out >= cdf.shape[1])
    if over.size:
        out[over] = (cdf[over] >= cdf[over, -1:]).argmax(axis=1)
    return out


def poor_fixes(counts: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """``(B, 3J + 1)``: the legal actions (``mask``) that fix a job row in a poor state, from
    the workers and PS given to each row this slot (``counts`` ``(B, J, 2)``)."""
    w, p = counts[..., 0], counts[..., 1]  # integers: w / p > 10 exactly when w > 10 p
    add_ps = ((w > 0) & (p == 0)) | ((p > 0) & (w > 10 * p))
    add_w = ~add_ps & (((p > 0) & (w == 0)) | ((w > 0) & (p > 10 * w)))
    fixes = np.zeros_like(mask)
    J = counts.shape[1]
    fixes[:, 0 : 3 * J : 3] = add_w
    fixes[:, 1 : 3 * J : 3] = add_ps
    return fixes & mask


def policy_cdf(
    logits: npt.NDArray[np.float32], mask: npt.NDArray[np.bool_]
) -> npt.NDArray[np.float64]:
    """``(B, K)`` running sums of the unnormalised softmax over the legal actions:
    ``exp(logit − the row's largest legal logit)``, 0 for illegal actions (float64)."""
    masked = np.where(mask, logits.astype(np.float64), -np.inf)
    top = masked.max(axis=1, keepdims=True)
    return np.cumsum(np.where(mask, np.exp(masked - top), 0.0), axis=1)


def choose_actions_numpy(
    logits: npt.NDArray[np.float32],
    u: npt.NDArray[np.float64],
    epsilon: float,
    rows: npt.NDArray[np.int64],
    mask: npt.NDArray[np.bool_],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """The actions (module docstring) and which ones exploration chose, in NumPy: the policy's
    ``logits`` ``(B, K)`` over the legal actions ``mask``; ``rows`` is `Dl2BatchedEnv.rows`
    ``(B, J, ROW_FIELDS)``."""
    out = inverse_cdf(policy_cdf(logits, mask), u[0])
    use = np.zeros(len(out), dtype=bool)
    maybe = np.flatnonzero(u[1] < epsilon)
    if maybe.size:
        fixes = poor_fixes(rows[maybe, :, sk.W : sk.P + 1], mask[maybe])
        n = fixes.sum(axis=1)
        pick = np.minimum((u[2, maybe] * n).astype(np.int64), n - 1)
        chosen = (np.cumsum(fixes, axis=1) > pick[:, None]).argmax(axis=1)
        poor = n > 0
        out[maybe[poor]] = chosen[poor]
        use[maybe[poor]] = True
    return out, use


@njit(cache=True)
def _fix(w: int, p: int) -> int:
    """0: none, 1: add a worker, 2: add a PS (`poor_fixes`)."""
    if (w > 0 and p == 0) or (p > 0 and w > 10 * p):
        return 2
    if (p > 0 and w == 0) or (w > 0 and p > 10 * w):
        return 1
    return 0


@njit(cache=True)
def choose_actions(
    logits: npt.NDArray[np.float32],
    u: npt.NDArray[np.float64],
    epsilon: float,
    rows: npt.NDArray[np.int64],
    mask: npt.NDArray[np.bool_],
    out: npt.NDArray[np.int64],
    use: npt.NDArray[np.bool_],
) -> None:
    """`choose_actions_numpy` of `policy_cdf` (``logits``, ``mask``) into ``out`` and ``use``
    (compiled; the running sums of one row at a time, legal actions only)."""
    B, K = logits.shape
    J = rows.shape[1]
    cdf = np.empty(K)
    for b in range(B):
        top = -np.inf
        for i in range(K):
            if mask[b, i] and logits[b, i] > top:
                top = logits[b, i]
        total = 0.0
        for i in range(K):
            if mask[b, i]:
                total += math.exp(float(logits[b, i]) - top)
            cdf[i] = total
        x = u[0, b] * total
        a = K
        for i in range(K):
            if cdf[i] > x:
                a = i
                break
        if a == K:  # rounding: the last action of positive probability
            for i in range(K):
                if cdf[i] >= total:
                    a = i
                    break
        out[b] = a
        use[b] = False
        if u[1, b] >= epsilon:
            continue
        n = 0
        for j in range(J):
            f = _fix(rows[b, j, sk.W], rows[b, j, sk.P])
            if f and mask[b, 3 * j + f - 1]:
                n += 1
        if n == 0:
            continue
        pick = min(int(u[2, b] * n), n - 1)
        for j in range(J):
            f = _fix(rows[b, j, sk.W], rows[b, j, sk.P])
            if f and mask[b, 3 * j + f - 1]:
                if pick == 0:
                    out[b] = 3 * j + f - 1
                    use[b] = True
                    break
                pick -= 1
