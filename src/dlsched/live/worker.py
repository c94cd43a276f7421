"""A worker: trains its slice of every global batch and exchanges blocks with the PS.

Step ``v`` (its version counter = updates reflected in the parameters it holds): compute the
gradient of its slice of batch ``v`` (`assignment.shard`), PUSH each PS its blocks, wait for
every PS's PARAMS of version ``v + 1``, copy them in, repeat. Replies are buffered and copied in
only when all PS answered, so a step can be recomputed on the same parameters if the worker set
changes mid-step (a worker failed).

Hot scaling (DL2 §5, step 4): after acknowledging a scaling clock the worker stops when its
version equals the clock, and resumes when the coordinator's RESUME brings the new roster (new
PS connections, new rank and batch slice). A joining worker pulls the parameters first.
"""

from __future__ import annotations

import logging
import statistics
import sys
import time
from collections import deque
from typing import Any

import torch
import zmq

from dlsched.live.assignment import block_bounds, shard
from dlsched.live.config import Roster
from dlsched.live.models import DataOrder, FlatModel, digits_like
from dlsched.live.node import Node, NodeArgs
from dlsched.live.protocol import (
    Message,
    ProtocolError,
    dealer,
    get_int,
    random_identity,
    recv,
    send,
    tensor_frame_bytes,
)

log = logging.getLogger(__name__)

_COORD_TYPES = frozenset({"START", "PREPARE", "RESUME", "RECONFIG", "ROLLBACK", "SHUTDOWN"})
_PS_TYPES = frozenset({"PARAMS"})


class Worker(Node):
    """One worker process (see the module docstring)."""

    role = "worker"

    def __init__(self, args: NodeArgs) -> None:
        super().__init__(args)
        cfg = self.cfg
        self.net = FlatModel(cfg.model, cfg.seed)
        self.images, self.labels = digits_like(cfg.seed, cfg.dataset_size)
        self.order = DataOrder(cfg.dataset_size, cfg.total_batch, cfg.seed)
        self.bounds = block_bounds(self.net.params.numel(), cfg.block_size)
        self.codec.limit(self.bounds)
        self.roster: Roster | None = None
        self.epoch = -1
        self.min_epoch = -1
        self.socks: dict[int, tuple[str, zmq.Socket[Any]]] = {}
        self.poller = zmq.Poller()
        self.poller.register(self.coord, zmq.POLLIN)
        self.expect = 0
        self.outstanding: set[int] = set()
        self.replies: dict[int, dict[int, torch.Tensor]] = {}
        self.clock: int | None = None
        self.pending_resume: Message | None = None
        self.t_suspend: float | None = None
        self.pull_reason = ""
        self.steps_run = 0
        self.loss = float("nan")
        self.t_step_start: float | None = None
        self.intervals: deque[float] = deque(maxlen=9)
        self.skip_interval = False

    # ------------------------------------------------------------------ main loop

    def run(self) -> None:
        self.register({})
        while not self.stop.is_set():
            if self.phase == "ready":
                self._step()
            events = dict(self.poller.poll(0 if self.phase == "ready" else 20))
            for sock in events:
                if sock is self.coord:
                    _, frames = recv(sock, routed=False)
                    self._dispatch(None, frames, _COORD_TYPES)
                else:
                    ps_id = self._ps_of(sock)
                    _, frames = recv(sock, routed=False)
                    if ps_id is not None:
                        self._dispatch(ps_id, frames, _PS_TYPES)

    def _dispatch(self, ps_id: int | None, frames: list[Any], allowed: frozenset[str]) -> None:
        try:
            msg = self.codec.decode(frames, allowed)
            if msg.type == "PARAMS":
                assert ps_id is not None
                self._on_params(ps_id, msg)
            else:
                getattr(self, f"_on_{msg.type.lower()}")(msg)
        except ProtocolError as exc:
            log.warning("%s: rejected message: %s", self.key, exc)
        except Exception:
            log.exception("%s: error handling a message (dropped)", self.key)

    def heartbeat_body(self) -> dict[str, Any]:
        return {"version": self.version, "phase": self.phase, "loss": self.loss}

    def _ps_of(self, sock: zmq.Socket[Any]) -> int | None:
        for ps_id, (_, s) in self.socks.items():
            if s is sock:
                return ps_id
        return None

    # ------------------------------------------------------------------ training

    def _step(self) -> None:
        if self.clock is not None and self.version >= self.clock:
            self.phase = "suspended"
            self.t_suspend = time.time()
            self.to_coord(
                "SUSPENDED", {"clock": self.clock, "version": self.version, "t": self.t_suspend}
            )
            if self.pending_resume is not None:
                resume, self.pending_resume = self.pending_resume, None
                self._on_resume(resume)
            return
        if self.version >= self.cfg.total_steps:
            self.phase = "done"
            self.to_coord("DONE", {"version": self.version})
            return
        if self.cfg.step_sleep_s:
            time.sleep(self.cfg.step_sleep_s)
        now = time.time()
        if self.t_step_start is not None and not self.skip_interval:
            self.intervals.append(now - self.t_step_start)
        self.skip_interval = False
        self.t_step_start = now
        self._compute(self.version)
        assert self.roster is not None
        self.expect = self.version + 1
        self.outstanding = set(self.roster.ps)
        self.replies = {}
        self.phase = "pushing"
        self._push(self.outstanding)

    def _compute(self, step: int) -> None:
        assert self.roster is not None
        workers = self.roster.workers
        start, end = shard(self.cfg.total_batch, len(workers), workers.index(self.id))
        idx = self.order.batch(step)[start:end]
        self.loss = self.net.loss_and_grad(self.images[idx], self.labels[idx], self.cfg.total_batch)
        self.steps_run += 1

    def _push(self, targets: set[int]) -> None:
        assert self.roster is not None
        by_ps = self.roster.by_ps()
        body = {"step": self.expect - 1, "epoch": self.epoch, "worker": self.id}
        grads = self.net.grads
        for ps_id in sorted(targets):
            tensors = {f"g{b}": grads[slice(*self.bounds[b])] for b in by_ps.get(ps_id, [])}
            send(self._sock(ps_id), self.codec.encode("PUSH", body, tensors))

    def _pull(self, version: int, reason: str) -> None:
        assert self.roster is not None
        self.expect = version
        self.version = version
        self.outstanding = set(self.roster.ps)
        self.replies = {}
        self.phase = "pulling"
        self.pull_reason = reason
        for ps_id in sorted(self.outstanding):
            send(self._sock(ps_id), self.codec.encode("PULL", {"version": version}))

    def _on_params(self, ps_id: int, msg: Message) -> None:
        version = get_int(msg.body, "version")
        epoch = get_int(msg.body, "epoch")
        if self.phase not in ("pushing", "pulling") or ps_id not in self.outstanding:
            log.debug("%s: unexpected PARAMS v%d from ps%d", self.key, version, ps_id)
            return
        if version != self.expect or epoch < self.min_epoch:
            log.debug("%s: stale PARAMS v%d from ps%d", self.key, version, ps_id)
            return
        assert self.roster is not None
        blocks: dict[int, torch.Tensor] = {}
        for name, t in msg.tensors.items():
            b = int(name[1:]) if name[:1] == "p" and name[1:].isdigit() else -1
            if not 0 <= b < len(self.bounds) or t.numel() != self.bounds[b][1] - self.bounds[b][0]:
                raise ProtocolError(f"PARAMS tensor {name} does not match a block")
            blocks[b] = t.reshape(-1)
        if set(blocks) != set(self.roster.blocks_of(ps_id)):
            raise ProtocolError(f"PARAMS from ps{ps_id} with blocks it does not own")
        self.replies[ps_id] = blocks
        self.outstanding.discard(ps_id)
        if self.outstanding:
            return
        for part in self.replies.values():
            for b, t in part.items():
                self.net.params[slice(*self.bounds[b])].copy_(t)
        self.replies = {}
        self.version = self.expect
        was_pulling = self.phase == "pulling"
        self.phase = "ready"
        if was_pulling:
            self.to_coord(
                "RESUMED",
                {
                    "epoch": self.epoch,
                    "t": time.time(),
                    "version": self.version,
                    "suspension_s": self._suspension(),
                    "registration_s": self.registration_s if self.pull_reason == "join" else 0.0,
                },
            )

    def _suspension(self) -> float:
        if self.t_suspend is None:
            return 0.0
        out = time.time() - self.t_suspend
        self.t_suspend = None
        return out

    # ------------------------------------------------------------------ coordinator messages

    def _on_shutdown(self, msg: Message) -> None:
        self.stop.set()

    def _on_start(self, msg: Message) -> None:
        roster = _roster(msg)
        self._set_roster(roster)
        self.min_epoch = roster.epoch
        self._pull(get_int(msg.body, "version"), "start")

    def _on_prepare(self, msg: Message) -> None:
        clock = get_int(msg.body, "clock")
        progress = self.expect if self.phase == "pushing" else self.version
        ok = self.roster is None or self.id not in self.roster.workers or progress <= clock
        self.clock = clock if ok else None
        if ok:
            try:  # connect to new PS now, so that resuming does not wait for it
                for ps_id, endpoint in Roster.from_dict(msg.body.get("roster")).ps.items():
                    self._sock(ps_id, endpoint)
            except ValueError as exc:
                raise ProtocolError(f"bad roster: {exc}") from None
        if self.phase == "suspended" and self.clock is not None and self.version < self.clock:
            self.phase = "ready"  # the clock moved later
            self.t_suspend = None
        elif self.phase == "done" and self.clock is not None:
            self.phase = "ready"  # finished at the clock: report as suspended there
        self.to_coord(
            "ACK",
            {
                "clock": clock,
                "epoch": get_int(msg.body, "epoch"),
                "version": self.version,
                "ok": ok,
            },
        )

    def _on_resume(self, msg: Message) -> None:
        roster = _roster(msg)
        version = get_int(msg.body, "version")
        pull = bool(msg.body.get("pull", False))
        joining = self.roster is None or self.phase == "init"
        if not joining and not pull and self.phase in ("pushing", "ready"):
            # replies of the step before the clock still in flight: resume once they are in
            self.pending_resume = msg
            return
        if self.id not in roster.workers:
            self.stop.set()
            return
        self._set_roster(roster)
        self.clock = None
        self.pending_resume = None
        if joining or pull:
            self._pull(version, "join" if joining else "rollback")
            return
        self.phase = "ready"
        now = time.time()
        self.skip_interval = True
        self.to_coord(
            "RESUMED",
            {
                "epoch": self.epoch,
                "t": now,
                "version": self.version,
                "suspension_s": self._suspension(),
                "registration_s": 0.0,
                # start of the last step before the clock → now, and the usual step interval:
                # their difference is the delay the scaling added to this worker's cadence
                "step_gap_s": now - self.t_step_start if self.t_step_start else 0.0,
                "step_interval_s": statistics.median(self.intervals) if self.intervals else 0.0,
            },
        )

    def _on_reconfig(self, msg: Message) -> None:
        roster = _roster(msg)
        if roster.epoch <= self.epoch:
            return
        if self.id not in roster.workers:
            self.stop.set()
            return
        self._set_roster(roster)
        if self.phase == "pushing":  # redo this step's gradient for the new batch split
            self.net.fresh_grads()
            self._compute(self.expect - 1)
            self._push(set(self.outstanding))

    def _on_rollback(self, msg: Message) -> None:
        roster = _roster(msg)
        if self.id not in roster.workers:
            self.stop.set()
            return
        self._set_roster(roster)
        self.min_epoch = roster.epoch
        self.version = get_int(msg.body, "version")
        self.clock = None
        self.pending_resume = None
        self.outstanding = set()
        self.replies = {}
        self.phase = "suspended"
        self.t_suspend = time.time()

    def _set_roster(self, roster: Roster) -> None:
        for ps_id in list(self.socks):
            if ps_id not in roster.ps or self.socks[ps_id][0] != roster.ps[ps_id]:
                _, sock = self.socks.pop(ps_id)
                self.poller.unregister(sock)
                sock.close(linger=0)
        for ps_id, endpoint in roster.ps.items():
            self._sock(ps_id, endpoint)
        self.roster = roster
        self.epoch = roster.epoch

    def _sock(self, ps_id: int, endpoint: str | None = None) -> zmq.Socket[Any]:
        known = self.socks.get(ps_id)
        if known is not None and (endpoint is None or known[0] == endpoint):
            return known[1]
        if endpoint is None:
            raise ProtocolError(f"no endpoint for ps{ps_id}")
        if known is not None:
            self.poller.unregister(known[1])
            known[1].close(linger=0)
        sock = dealer(
            self.ctx, random_identity(f"w{self.id}-"), endpoint, tensor_frame_bytes(self.bounds)
        )
        self.poller.register(sock, zmq.POLLIN)
        self.socks[ps_id] = (endpoint, sock)
        return sock


def _roster(msg: Message) -> Roster:
    try:
        return Roster.from_dict(msg.body.get("roster"))
    except ValueError as exc:
        raise ProtocolError(f"bad roster: {exc}") from None


def worker_main(args: NodeArgs) -> None:
    """Entry point of a worker process."""
    worker = Worker(args)
    try:
        worker.run()
    finally:
        worker.close()
        sys.stdout.flush()
