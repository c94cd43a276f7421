"""A named vector of the three resources a task can hold: GPUs, CPU cores and memory (GB)."""

from __future__ import annotations

from dataclasses import dataclass

RESOURCE_NAMES: tuple[str, str, str] = ("gpu", "cpu", "mem")


@dataclass(frozen=True, slots=True)
class Resources:
    """An amount of each resource.

    Attributes:
        gpu: GPUs (whole devices for real jobs; fractional only in abstract workloads).
        cpu: CPU cores.
        mem: memory in GB.
    """

    gpu: float = 0.0
    cpu: float = 0.0
    mem: float = 0.0

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.gpu + other.gpu, self.cpu + other.cpu, self.mem + other.mem)

    def __sub__(self, other: Resources) -> Resources:
        return Resources(self.gpu - other.gpu, self.cpu - other.cpu, self.mem - other.mem)

    def __mul__(self, k: float) -> Resources:
        return Resources(self.gpu * k, self.cpu * k, self.mem * k)

    __rmul__ = __mul__

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.gpu, self.cpu, self.mem)

    def fits_in(self, capacity: Resources, eps: float = 1e-9) -> bool:
        """True if every component is at most the capacity's (with a float tolerance)."""
        return (
            self.gpu <= capacity.gpu + eps
            and self.cpu <= capacity.cpu + eps
            and self.mem <= capacity.mem + eps
        )

    def dominant_share(self, total: Resources) -> float:
        """Largest fraction of ``total`` this amount takes over the resources ``total`` has."""
        share = 0.0
        for mine, cap in zip(self.as_tuple(), total.as_tuple(), strict=True):
            if cap > 0:
                share = max(share, mine / cap)
        return share

    def is_zero(self) -> bool:
        return self.gpu == 0 and self.cpu == 0 and self.mem == 0
