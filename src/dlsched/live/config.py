"""Settings of one live job (`JobConfig`) and the membership every process agrees on (`Roster`)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass(frozen=True, slots=True)
class JobConfig:
    """What the user sets for one live training job; shipped to every process as JSON.

    Attributes:
        model: model name (`dlsched.live.models.MODELS`: ``"cnn"``, ``"mlp"``, ``"large"``).
        total_batch: samples per synchronous step over all workers; each worker gets
            ``total_batch / num_workers`` (the remainder spread over the first ranks, DL2 §3.1).
        lr: SGD learning rate.
        momentum: SGD momentum (0 disables it); its state lives on the PS and migrates with them.
        seed: seeds the model initialisation, the dataset and the data order.
        total_steps: the job stops after this many synchronous steps.
        host: address every process binds and advertises (127.0.0.1 keeps it on loopback).
        block_size: parameters per block, the unit the PS own and migrate; None picks
            ``max(4096, ceil(n / 128))``.
        snapshot_every: each PS writes its shard every this many steps (0: never); the last
            version all blocks were written at is what a PS failure rolls back to.
        heartbeat_interval_s: seconds between heartbeats of every PS and worker.
        heartbeat_timeout_s: a member silent this long, seconds, is declared dead.
        step_sleep_s: extra seconds a worker sleeps per step (throttle for tests and demos).
        dataset_size: samples in the synthetic digits dataset.
        round_timeout_s: a scaling round that does not finish within this, seconds, is aborted.
        log_level: logging level name of the child processes.
    """

    model: str = "mlp"
    total_batch: int = 64
    lr: float = 0.05
    momentum: float = 0.9
    seed: int = 0
    total_steps: int = 1_000_000
    host: str = "127.0.0.1"
    block_size: int | None = None
    snapshot_every: int = 50
    heartbeat_interval_s: float = 0.2
    heartbeat_timeout_s: float = 1.0
    step_sleep_s: float = 0.0
    dataset_size: int = 1797
    round_timeout_s: float = 30.0
    log_level: str = "WARNING"

    def __post_init__(self) -> None:
        if self.total_batch < 1:
            raise ValueError(f"total_batch must be >= 1, got {self.total_batch}")
        if self.total_steps < 0:
            raise ValueError(f"total_steps must be >= 0, got {self.total_steps}")
        if self.block_size is not None and self.block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {self.block_size}")
        if self.heartbeat_timeout_s <= self.heartbeat_interval_s:
            raise ValueError("heartbeat_timeout_s must exceed heartbeat_interval_s")

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> JobConfig:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("JobConfig JSON must be an object")
        known = {f.name for f in fields(JobConfig)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown JobConfig fields: {sorted(unknown)}")
        return JobConfig(**data)


@dataclass(slots=True)
class Roster:
    """The membership of one epoch of a job: who serves which block, who trains at which rank.

    Every message between workers and PS is tagged with the epoch, so that a message from an
    older roster is recognised and dropped.

    Attributes:
        epoch: increases whenever membership or block ownership changes.
        ps: PS id → endpoint (``tcp://host:port``) of its ROUTER socket.
        workers: worker ids in rank order (rank = index); ranks pick the slice of each batch.
        owners: block index → id of the PS holding it.
    """

    epoch: int
    ps: dict[int, str] = field(default_factory=dict)
    workers: list[int] = field(default_factory=list)
    owners: list[int] = field(default_factory=list)

    def blocks_of(self, ps_id: int) -> list[int]:
        """Block indices held by ``ps_id``, ascending."""
        return [b for b, owner in enumerate(self.owners) if owner == ps_id]

    def by_ps(self) -> dict[int, list[int]]:
        """PS id → its block indices (every PS of the roster, possibly with no block)."""
        out: dict[int, list[int]] = {p: [] for p in self.ps}
        for b, owner in enumerate(self.owners):
            out.setdefault(owner, []).append(b)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "ps": {str(k): v for k, v in self.ps.items()},
            "workers": list(self.workers),
            "owners": list(self.owners),
        }

    @staticmethod
    def from_dict(data: Any) -> Roster:
        """Parse and validate a roster received from another process.

        Raises:
            ValueError: if the structure or the types are wrong.
        """
        if not isinstance(data, dict):
            raise ValueError("roster must be an object")
        epoch = data.get("epoch")
        ps = data.get("ps")
        workers = data.get("workers")
        owners = data.get("owners")
        if not isinstance(epoch, int) or epoch < 0:
            raise ValueError("roster.epoch must be a non-negative int")
        if not isinstance(ps, dict) or not all(
            isinstance(k, str) and k.isdigit() and isinstance(v, str) for k, v in ps.items()
        ):
            raise ValueError("roster.ps must map PS ids to endpoints")
        if not isinstance(workers, list) or not all(isinstance(w, int) and w >= 0 for w in workers):
            raise ValueError("roster.workers must be a list of ids")
        ps_ids = {int(k) for k in ps}
        if not isinstance(owners, list) or not all(
            isinstance(o, int) and o in ps_ids for o in owners
        ):
            raise ValueError("roster.owners must name PS of the roster")
        if len(set(workers)) != len(workers):
            raise ValueError("roster.workers has duplicates")
        ps_sorted = dict(sorted((int(k), v) for k, v in ps.items()))
        return Roster(epoch, ps_sorted, workers, owners)
