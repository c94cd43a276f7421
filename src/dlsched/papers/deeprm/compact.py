"""DeepRM's state as a short feature vector (``observation="compact"`` of `DeepRMEnv`).

The same information as DeepRM's ``T × W`` image (`dlsched.papers.deeprm.state.render`) in
``T·d + M·(d + 4) + 1`` numbers (101 by default) instead of 8,860 pixels, so a library's default
MLP sees a job's duration and demand as one number each rather than as a block of pixels:

* the cluster: slots in use at each of the ``T`` steps ahead, per resource, ÷ ``R``;
* per job slot ``i`` (``M`` of them): present (0/1), duration ÷ ``T``, demand per resource ÷
  ``R``, whether it fits now (0/1), and the first step offset at which it fits ÷ ``T`` (1 if it
  fits nowhere in the horizon) — the last two derived from the rest, as `fit_table` does for
  the action mask;
* the backlog: jobs waiting beyond the slots ÷ the backlog's size.

Every entry is in ``[0, 1]``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dlsched.papers.deeprm.state import DeepRMShape, fit_table


def compact_dim(shape: DeepRMShape) -> int:
    """Length of the compact observation."""
    return shape.horizon * shape.num_res + shape.slots * (shape.num_res + 4) + 1


def compact_observation(
    shape: DeepRMShape,
    used: npt.NDArray[np.int64],
    length: npt.NDArray[np.int64],
    demand: npt.NDArray[np.int64],
    backlog: npt.NDArray[np.int64],
) -> npt.NDArray[np.float32]:
    """``(B, compact_dim)`` observations of a batch of states (arrays as `render` takes)."""
    batch = used.shape[0]
    t_len, r_len = shape.horizon, shape.res_slots
    fits, first = fit_table(used, length, demand, r_len)
    present = length > 0
    per_slot = np.concatenate(
        [
            present[:, :, None],
            (length / t_len)[:, :, None],
            demand / r_len,
            (fits & (first == 0))[:, :, None],
            np.where(fits, first / t_len, 1.0)[:, :, None],
        ],
        axis=2,
    )
    per_slot[~present] = 0.0
    obs = np.concatenate(
        [
            (used / r_len).reshape(batch, -1),
            per_slot.reshape(batch, -1),
            (backlog / max(shape.backlog, 1)).reshape(batch, 1),
        ],
        axis=1,
    )
    return np.clip(obs, 0.0, 1.0).astype(np.float32)
