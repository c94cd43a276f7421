"""`Locality`: all-reduce GPU jobs slowed down by spanning servers (SCED², Fig. 1).

Speeds are in ideal seconds of work per second: 1.0 means "as fast as the job's best placement",
and ``JobSpec.total_work`` is the job's duration in seconds at that placement.

**Models and their sensitivity.** SCED² (seed 004) §II-A, Fig. 1, measured the mini-batch time
of 4-GPU jobs on one server and spread over two servers (2 GPUs each); spread, they were
VGG16 5.9×, Transformer 2.7×, DeepSpeech 1.6× and Inception3 1.4× slower. Its workload (§IV-A,
Table II) uses six models: those four plus **AlexNet** and **ResNet-50**, which Fig. 1 does not
measure. Their slowdowns are our assumption, following §II-A's explanation that sensitivity is set
by a model's transfer-to-computation ratio:

* ``alexnet`` 4.5×: like VGG16, dominated by large fully connected layers (61 M parameters,
  communication-bound), so among the sensitive models; below VGG16 because it has under half
  VGG16's 138 M parameters to all-reduce.
* ``resnet-50`` 1.5×: like Inception3, a compute-bound convolutional network with a similar
  number of parameters (25.6 M vs 23.8 M), so among the insensitive ones; between Inception3
  (1.4×) and DeepSpeech (1.6×).

`SENSITIVITY` holds each model's slowdown at two servers and `CATEGORY` its category in SCED²'s
§IV-A mix, `CATEGORY_MIX` (CV 10 %, NLP 60 %, Speech 30 %): the four ImageNet models are CV,
Transformer (WMT16) is NLP and DeepSpeech (Common Voice) is Speech (Table II's datasets).

**More servers.** A job's iteration is computation plus gradient all-reduce; only the all-reduce
grows when the GPUs are spread. With a hierarchical (ring) all-reduce, each server sends and
receives ``2 (k - 1) / k`` times the gradient size over the slow inter-server link when the job
spans ``k`` servers, so the cross-server time grows as ``(k - 1) / k``. Calibrating that term to
Fig. 1 (slowdown ``S`` at ``k = 2``) gives the slowdown relative to one server::

    f(k) = 1 + 2 (S - 1) (k - 1) / k        f(1) = 1,  f(2) = S,  f(k) < 2 S - 1

so VGG16 is 5.9× slower on 2 servers, 8.35× on 4 and 9.58× on 8; Inception3 1.4×, 1.6×, 1.7×.
The number of GPUs does not enter: each GPU computes its own mini-batch (weak scaling) and the
cross-server traffic per server does not depend on how many GPUs it holds. A 1-GPU job always
runs on one server and is never slowed down.

**Best placement.** A job asking for more GPUs than a server holds (``gpus_per_server``, 8 as in
SCED²'s cluster and Philly's) cannot run on one server; its best placement spans
``k_best = ceil(num_workers / gpus_per_server)`` servers, so on ``k`` servers its speed is
``min(1, f(k_best) / f(k))``.

**Task counts.** An all-reduce job's workers are its GPUs. A non-elastic job (``min_workers ==
max_workers``, SCED²'s jobs) is gang-scheduled: speed 0 with fewer GPUs than ``num_workers``;
GPUs beyond it add nothing. An elastic job (a trace row with ``min_replicas < max_replicas``)
runs with at least ``min_workers`` GPUs, and its speed is multiplied by ``g / num_workers`` for
the ``g`` GPUs it uses (at most ``max_workers``): linear scaling relative to the count its
``total_work`` was measured at, with the locality factor above on top (so 16 GPUs on two servers
for a job that asked for 8 run at ``2 / f(2)``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

from dlsched.core import Allocation, JobSpec

SENSITIVITY: dict[str, float] = {
    "vgg-16": 5.9,
    "alexnet": 4.5,
    "transformer": 2.7,
    "deepspeech": 1.6,
    "resnet-50": 1.5,
    "inception-v3": 1.4,
}
"""Slowdown of a job spread over two servers relative to one server (SCED² Fig. 1; alexnet and
resnet-50 are our assumption, see the module docstring)."""

CATEGORY: dict[str, str] = {
    "vgg-16": "cv",
    "alexnet": "cv",
    "resnet-50": "cv",
    "inception-v3": "cv",
    "transformer": "nlp",
    "deepspeech": "speech",
}
"""Category of each model in SCED²'s workload (§IV-A, Table II)."""

CATEGORY_MIX: dict[str, float] = {"cv": 0.10, "nlp": 0.60, "speech": 0.30}
"""Share of jobs in each category (SCED² §IV-A, after Gandiva's trace)."""

GPUS_PER_SERVER = 8
"""GPUs per server that define a job's best placement (SCED² §IV-A: 15 servers × 8 GPUs)."""


def slowdown(sensitivity: float, num_servers: int) -> float:
    """Slowdown ``f(k)`` of a job spanning ``num_servers`` servers, relative to one server.

    Args:
        sensitivity: the model's slowdown at two servers (``S``, >= 1).
        num_servers: servers the job's GPUs span (``k``, >= 1).

    Returns:
        ``1 + 2 (S - 1) (k - 1) / k`` (1.0 for one server).
    """
    k = max(1, num_servers)
    return 1.0 + 2.0 * (sensitivity - 1.0) * (k - 1) / k


class Locality:
    """Speed of all-reduce jobs from how many servers their GPUs span (module docstring).

    Args:
        gpus_per_server: GPUs a server holds; decides a large job's best placement.
        sensitivity: model → slowdown at two servers; None → `SENSITIVITY`.

    Raises:
        ValueError: ``gpus_per_server < 1`` or a sensitivity below 1.
    """

    name = "locality"

    def __init__(
        self,
        gpus_per_server: int = GPUS_PER_SERVER,
        sensitivity: Mapping[str, float] | None = None,
    ) -> None:
        if gpus_per_server < 1:
            raise ValueError(f"gpus_per_server must be >= 1, got {gpus_per_server}")
        table = dict(SENSITIVITY if sensitivity is None else sensitivity)
        for model, s in table.items():
            if not (s >= 1.0 and math.isfinite(s)):
                raise ValueError(f"sensitivity of {model!r} must be a finite number >= 1, got {s}")
        self.gpus_per_server = gpus_per_server
        self.sensitivity: Mapping[str, float] = MappingProxyType(table)

    def sensitivity_of(self, model: str) -> float:
        """Slowdown of ``model`` at two servers.

        Raises:
            ValueError: the model is not in the table.
        """
        try:
            return self.sensitivity[model]
        except KeyError:
            known = ", ".join(sorted(self.sensitivity))
            raise ValueError(f"locality: unknown model {model!r} (known: {known})") from None

    def speed(self, spec: JobSpec, alloc: Allocation) -> float:
        """Ideal seconds of work per second of ``spec`` on ``alloc`` (0.0 if it cannot train)."""
        gpus = alloc.num_workers
        if gpus == 0 or spec.num_workers < 1:
            return 0.0
        if spec.elastic:
            if gpus < spec.min_workers:
                return 0.0
            scale = min(gpus, max(spec.max_workers, spec.num_workers)) / spec.num_workers
        else:
            if gpus < spec.num_workers:
                return 0.0
            scale = 1.0
        s = self.sensitivity_of(spec.model)
        best = math.ceil(spec.num_workers / self.gpus_per_server)
        if alloc.num_servers == best:
            return scale  # f(k) / f(k) is exactly 1 (the engine's usual case, kept cheap)
        return scale * min(1.0, slowdown(s, best) / slowdown(s, alloc.num_servers))

    def ideal_speed(self, spec: JobSpec) -> float:
        """1.0: ``total_work`` is measured at the requested GPUs and best placement."""
        return 1.0

    def best_speed(self, spec: JobSpec) -> float:
        """Best speed over the GPU counts the job may use, each on its fewest servers."""
        if spec.num_workers < 1:
            return 0.0
        if not spec.elastic:
            return 1.0
        s = self.sensitivity_of(spec.model)
        best_k = math.ceil(spec.num_workers / self.gpus_per_server)
        top = max(spec.max_workers, spec.num_workers)
        return max(
            g
            / spec.num_workers
            * min(1.0, slowdown(s, best_k) / slowdown(s, math.ceil(g / self.gpus_per_server)))
            for g in range(max(spec.min_workers, 1), top + 1)
        )
