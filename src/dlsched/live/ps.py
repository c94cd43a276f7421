"""A parameter server: holds a shard of the parameter blocks, applies synchronous SGD, migrates.

Per step it waits for one gradient push from every worker of its epoch, sums them in rank order,
applies SGD with momentum *out of place* (so tensors already handed to ZeroMQ are never
modified), bumps its version counter and answers every worker with the new parameters.

Hot scaling (DL2 §5): on PREPARE it acknowledges a scaling clock if it has not passed it; on
COMMIT, once its version equals the clock, it sends the blocks it loses to their new owners
(MIGRATE, parameters and momentum), waits for the blocks it gains, switches to the new epoch and
tells the coordinator (MIGRATED). A checkpoint round writes the shard to disk at the clock
instead. ROLLBACK reloads the shard from a snapshot after a PS failure.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from pathlib import Path
from typing import Any

import torch
import zmq

from dlsched.live.assignment import block_bounds
from dlsched.live.checkpoint import Shard, confine, read_files, write_blocks
from dlsched.live.config import Roster
from dlsched.live.models import flat_init, num_params
from dlsched.live.node import Node, NodeArgs
from dlsched.live.protocol import (
    Message,
    ProtocolError,
    dealer,
    get_int,
    get_str,
    random_identity,
    recv,
    router,
    send,
    tensor_frame_bytes,
)

log = logging.getLogger(__name__)

_ROUTER_TYPES = frozenset({"PUSH", "PULL", "MIGRATE", "FETCH"})
_COORD_TYPES = frozenset({"START", "PREPARE", "COMMIT", "RECONFIG", "ROLLBACK", "SHUTDOWN"})
_MAX_FUTURE = 256


class ParameterServer(Node):
    """One PS process (see the module docstring)."""

    role = "ps"

    def __init__(self, args: NodeArgs) -> None:
        super().__init__(args)
        self.bounds = block_bounds(num_params(self.cfg.model), self.cfg.block_size)
        self.codec.limit(self.bounds)
        self.router, self.endpoint = router(
            self.ctx, f"tcp://{self.cfg.host}:*", tensor_frame_bytes(self.bounds)
        )
        self.sizes = [e - s for s, e in self.bounds]
        self.ready = False
        self.epoch = -1
        self.roster: Roster | None = None
        self.shard: Shard = {}
        self.pushes: dict[int, tuple[bytes, dict[int, torch.Tensor]]] = {}
        self.future: list[tuple[bytes, Message]] = []
        self.pending_pulls: list[tuple[bytes, int]] = []
        # scaling round
        self.clock: int | None = None
        self.round_kind = ""
        self.committed = False
        self.next_roster: Roster | None = None
        self.ckpt_dir = ""
        self.migrating = False
        self.t_reach = 0.0
        self.bytes_out = 0
        self.incoming: dict[int, tuple[int, int, torch.Tensor, torch.Tensor | None]] = {}
        self.peers: dict[int, tuple[str, zmq.Socket[Any]]] = {}
        # snapshots
        self.snap_in: queue.Queue[tuple[int, int, Shard, Path] | None] = queue.Queue(maxsize=1)
        self.snap_out: queue.Queue[tuple[int, int, list[int], str]] = queue.Queue()
        self.snap_thread = threading.Thread(target=self._snapshot_writer, daemon=True)

    # ------------------------------------------------------------------ main loop

    def run(self) -> None:
        self.register({"endpoint": self.endpoint})
        self.snap_thread.start()
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        poller.register(self.coord, zmq.POLLIN)
        while not self.stop.is_set():
            events = dict(poller.poll(20))
            if self.coord in events:
                _, frames = recv(self.coord, routed=False)
                self._dispatch(None, frames, _COORD_TYPES)
            if self.router in events:
                ident, frames = recv(self.router, routed=True)
                if ident is not None:
                    self._dispatch(ident, frames, _ROUTER_TYPES)
            while not self.snap_out.empty():
                version, epoch, blocks, path = self.snap_out.get_nowait()
                self.to_coord(
                    "SNAPSHOT_DONE",
                    {"version": version, "epoch": epoch, "blocks": blocks, "file": path},
                )
        self.snap_in.put(None)

    def _dispatch(self, ident: bytes | None, frames: list[Any], allowed: frozenset[str]) -> None:
        try:
            msg = self.codec.decode(frames, allowed)
            handler = getattr(self, f"_on_{msg.type.lower()}")
            handler(ident, msg)
        except ProtocolError as exc:
            log.warning("%s: rejected message: %s", self.key, exc)
        except Exception:
            log.exception("%s: error handling a message (dropped)", self.key)

    def heartbeat_body(self) -> dict[str, Any]:
        return {"version": self.version, "phase": self.phase, "epoch": self.epoch}

    # ------------------------------------------------------------------ coordinator messages

    def _on_shutdown(self, ident: bytes | None, msg: Message) -> None:
        self.stop.set()

    def _on_start(self, ident: bytes | None, msg: Message) -> None:
        roster = _roster(msg)
        version = get_int(msg.body, "version")
        files = msg.body.get("files")
        self._load(roster, version, files)
        self.to_coord("READY", {"epoch": self.epoch, "version": self.version})
        self._serve_pulls()

    def _on_prepare(self, ident: bytes | None, msg: Message) -> None:
        clock = get_int(msg.body, "clock")
        epoch = get_int(msg.body, "epoch")
        ok = not self.ready or self.version <= clock
        self.clock = clock if ok else None
        self.round_kind = get_str(msg.body, "kind")
        self.committed = False
        self.to_coord("ACK", {"clock": clock, "epoch": epoch, "version": self.version, "ok": ok})
        self._maybe_apply()

    def _on_commit(self, ident: bytes | None, msg: Message) -> None:
        clock = get_int(msg.body, "clock")
        if self.clock != clock and self.ready:
            raise ProtocolError(f"COMMIT for clock {clock}, acknowledged {self.clock}")
        self.clock = clock
        self.round_kind = get_str(msg.body, "kind")
        self.next_roster = _roster(msg)
        ckpt_dir = str(msg.body.get("dir", ""))
        if self.round_kind == "checkpoint":
            try:
                ckpt_dir = str(confine(ckpt_dir, self.args.workdir))
            except ValueError as exc:
                raise ProtocolError(str(exc)) from None
        self.ckpt_dir = ckpt_dir
        self.committed = True
        if self.next_roster.epoch <= self.epoch:
            raise ProtocolError("COMMIT of an old epoch")
        if not self.ready:  # a joining PS: waits for its blocks
            self.migrating = True
            self.t_reach = time.time()
            self._check_incoming()
        elif self.version == clock:
            self._start_migration()

    def _on_reconfig(self, ident: bytes | None, msg: Message) -> None:
        roster = _roster(msg)
        if roster.epoch <= self.epoch:
            return
        if self.id not in roster.ps or set(roster.blocks_of(self.id)) != set(self.shard):
            raise ProtocolError("RECONFIG may not change block ownership")
        self.roster = roster
        self.epoch = roster.epoch
        self.pushes.clear()  # partial sums of the old epoch: the step is redone by the new set
        self._replay_future()
        self._serve_pulls()

    def _on_rollback(self, ident: bytes | None, msg: Message) -> None:
        roster = _roster(msg)
        version = get_int(msg.body, "version")
        files = msg.body.get("files")
        self.future = [(i, m) for i, m in self.future if m.body.get("epoch", -1) >= roster.epoch]
        self.incoming.clear()
        self.clock = None
        self.committed = False
        self.migrating = False
        self.pending_pulls = [(i, v) for i, v in self.pending_pulls if v == version]
        self._load(roster, version, files)
        self.to_coord("ROLLED_BACK", {"epoch": self.epoch, "version": self.version})
        self._replay_future()
        self._serve_pulls()

    def _load(self, roster: Roster, version: int, files: Any) -> None:
        mine = roster.blocks_of(self.id)
        if files:
            if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
                raise ProtocolError("files must be a list of paths")
            try:
                paths = [confine(f, self.args.workdir) for f in files]
            except ValueError as exc:
                raise ProtocolError(str(exc)) from None
            self.shard = read_files(paths, mine)
        elif version == 0:
            flat = flat_init(self.cfg.model, self.cfg.seed)
            self.shard = {b: (flat[slice(*self.bounds[b])].clone(), None) for b in mine}
        else:
            raise ProtocolError(f"no block files to restore version {version}")
        self.version = version
        self.roster = roster
        self.epoch = roster.epoch
        self.pushes.clear()
        self.ready = self.id in roster.ps
        self.phase = "serving"

    # ------------------------------------------------------------------ worker messages

    def _on_push(self, ident: bytes | None, msg: Message) -> None:
        assert ident is not None
        step = get_int(msg.body, "step")
        epoch = get_int(msg.body, "epoch")
        worker = get_int(msg.body, "worker")
        if not self.ready or self.migrating or epoch > self.epoch:
            if epoch >= self.epoch:
                if len(self.future) >= _MAX_FUTURE:
                    self.future.pop(0)
                    log.warning("%s: too many early pushes; dropped the oldest", self.key)
                self.future.append((ident, msg))
            return
        if epoch < self.epoch or step != self.version:
            log.debug("%s: stale push (step %d epoch %d) from w%d", self.key, step, epoch, worker)
            return
        assert self.roster is not None
        if worker not in self.roster.workers:
            raise ProtocolError(f"push from w{worker}, not a worker of epoch {epoch}")
        grads = self._blocks(msg, "g")
        if set(grads) != set(self.shard):
            raise ProtocolError(f"push from w{worker} carries blocks of another PS")
        self.pushes[self.roster.workers.index(worker)] = (ident, grads)
        self._maybe_apply()

    def _on_pull(self, ident: bytes | None, msg: Message) -> None:
        assert ident is not None
        version = get_int(msg.body, "version")
        if self.ready and not self.migrating and version == self.version:
            self._reply_params(ident)
        elif not self.ready or self.migrating or version > self.version:
            if len(self.pending_pulls) < _MAX_FUTURE:
                self.pending_pulls.append((ident, version))
        else:
            log.warning("%s: pull of old version %d (now %d)", self.key, version, self.version)

    def _on_fetch(self, ident: bytes | None, msg: Message) -> None:
        assert ident is not None
        self._reply_params(ident)

    def _reply_params(self, ident: bytes) -> None:
        tensors = {f"p{b}": p for b, (p, _) in sorted(self.shard.items())}
        body = {"version": self.version, "epoch": self.epoch, "ps": self.id}
        send(self.router, self.codec.encode("PARAMS", body, tensors), to=ident)

    def _serve_pulls(self) -> None:
        if not self.ready or self.migrating:
            return
        keep = []
        for ident, version in self.pending_pulls:
            if version == self.version:
                self._reply_params(ident)
            elif version > self.version:
                keep.append((ident, version))
        self.pending_pulls = keep

    def _replay_future(self) -> None:
        future, self.future = self.future, []
        for ident, msg in future:
            if msg.body.get("epoch", -1) >= self.epoch:
                self._on_push(ident, msg)

    def _blocks(self, msg: Message, prefix: str) -> dict[int, torch.Tensor]:
        out: dict[int, torch.Tensor] = {}
        for name, t in msg.tensors.items():
            if not name.startswith(prefix) or not name[1:].isdigit():
                continue
            b = int(name[1:])
            if b >= len(self.sizes) or t.dtype != torch.float32 or t.numel() != self.sizes[b]:
                raise ProtocolError(f"tensor {name} does not match block {b}")
            out[b] = t.reshape(-1)
        return out

    # ------------------------------------------------------------------ SGD

    def _maybe_apply(self) -> None:
        if self.roster is None or self.migrating or not self.ready:
            return
        if len(self.pushes) < len(self.roster.workers) or not self.roster.workers:
            return
        if self.clock is not None and self.version >= self.clock:
            return
        lr, mu = self.cfg.lr, self.cfg.momentum
        ranks = sorted(self.pushes)
        for b, (p, m) in list(self.shard.items()):
            g = self.pushes[ranks[0]][1][b]
            for r in ranks[1:]:
                g = g + self.pushes[r][1][b]
            if mu:
                m = g if m is None else m.mul(mu).add_(g)
                p = p.add(m, alpha=-lr)
            else:
                p = p.add(g, alpha=-lr)
            self.shard[b] = (p, m if mu else None)
        self.version += 1
        idents = [ident for ident, _ in self.pushes.values()]
        self.pushes.clear()
        for ident in idents:
            self._reply_params(ident)
        self._serve_pulls()
        every = self.cfg.snapshot_every
        if every and self.version % every == 0:
            self._snapshot()
        if self.clock is not None and self.committed and self.version == self.clock:
            self._start_migration()

    # ------------------------------------------------------------------ migration

    def _start_migration(self) -> None:
        assert self.next_roster is not None and self.clock is not None
        self.migrating = True
        self.phase = "migrating"
        self.t_reach = time.time()
        if self.round_kind == "checkpoint":
            path = Path(self.ckpt_dir) / f"ps{self.id}.blk"
            nbytes = write_blocks(path, self.version, self.shard)
            self.to_coord(
                "MIGRATED",
                {
                    "kind": "checkpoint",
                    "epoch": self.next_roster.epoch,
                    "version": self.version,
                    "file": str(path),
                    "bytes_out": nbytes,
                    "t_reach": self.t_reach,
                    "t_done": time.time(),
                },
            )
            self.phase = "checkpointed"
            return
        owners = self.next_roster.owners
        outgoing: dict[int, list[int]] = {}
        for b in self.shard:
            if owners[b] != self.id:
                outgoing.setdefault(owners[b], []).append(b)
        self.bytes_out = 0
        for target, blocks in outgoing.items():
            tensors: dict[str, torch.Tensor] = {}
            for b in blocks:
                p, m = self.shard.pop(b)
                tensors[f"p{b}"] = p
                self.bytes_out += p.numel() * 4
                if m is not None:
                    tensors[f"m{b}"] = m
                    self.bytes_out += m.numel() * 4
            body = {"epoch": self.next_roster.epoch, "version": self.version, "from": self.id}
            send(self._peer(target), self.codec.encode("MIGRATE", body, tensors))
        self._check_incoming()

    def _peer(self, ps_id: int) -> zmq.Socket[Any]:
        assert self.next_roster is not None
        endpoint = self.next_roster.ps[ps_id]
        known = self.peers.get(ps_id)
        if known is None or known[0] != endpoint:
            if known is not None:
                known[1].close(linger=0)
            sock = dealer(self.ctx, random_identity(f"p{self.id}-"), endpoint)
            sock.setsockopt(zmq.LINGER, 2000)
            self.peers[ps_id] = (endpoint, sock)
        return self.peers[ps_id][1]

    def _on_migrate(self, ident: bytes | None, msg: Message) -> None:
        epoch = get_int(msg.body, "epoch")
        version = get_int(msg.body, "version")
        if epoch <= self.epoch:
            log.warning("%s: migration of old epoch %d dropped", self.key, epoch)
            return
        params = self._blocks(msg, "p")
        moms = self._blocks(msg, "m")
        for b, p in params.items():
            self.incoming[b] = (epoch, version, p, moms.get(b))
        self._check_incoming()

    def _check_incoming(self) -> None:
        if not (self.migrating and self.committed) or self.next_roster is None:
            return
        if self.round_kind != "scale":
            return
        roster = self.next_roster
        wanted = {b for b in roster.blocks_of(self.id) if b not in self.shard}
        have = {b for b, (e, _, _, _) in self.incoming.items() if e == roster.epoch}
        if not wanted <= have:
            return
        versions = {self.incoming[b][1] for b in wanted}
        if versions and versions != {self.clock}:
            raise ProtocolError(f"migrated blocks of versions {versions}, clock {self.clock}")
        bytes_in = 0
        for b in wanted:
            _, _, p, m = self.incoming.pop(b)
            self.shard[b] = (p, m)
            bytes_in += p.numel() * 4 + (m.numel() * 4 if m is not None else 0)
        self.incoming = {b: v for b, v in self.incoming.items() if v[0] > roster.epoch}
        assert self.clock is not None
        joined = not self.ready
        self.version = self.clock
        self.roster = roster
        self.epoch = roster.epoch
        self.ready = self.id in roster.ps
        self.pushes.clear()
        self.clock = None
        self.committed = False
        self.migrating = False
        self.phase = "serving" if self.ready else "removed"
        self.to_coord(
            "MIGRATED",
            {
                "kind": "scale",
                "epoch": self.epoch,
                "version": self.version,
                "bytes_out": self.bytes_out,
                "bytes_in": bytes_in,
                "t_reach": self.t_reach,
                "t_done": time.time(),
                "registration_s": self.registration_s if joined else 0.0,
            },
        )
        self._replay_future()
        self._serve_pulls()

    # ------------------------------------------------------------------ snapshots

    def _snapshot(self) -> None:
        path = Path(self.args.workdir) / "snapshots" / f"v{self.version:08d}" / f"ps{self.id}.blk"
        try:
            self.snap_in.put_nowait((self.version, self.epoch, dict(self.shard), path))
        except queue.Full:
            log.info("%s: snapshot writer busy, skipping version %d", self.key, self.version)

    def _snapshot_writer(self) -> None:
        while True:
            item = self.snap_in.get()
            if item is None:
                return
            version, epoch, shard, path = item
            try:
                write_blocks(path, version, shard)
            except OSError as exc:
                log.warning("%s: snapshot %d failed: %s", self.key, version, exc)
                continue
            self.snap_out.put((version, epoch, sorted(shard), str(path)))


def _roster(msg: Message) -> Roster:
    try:
        return Roster.from_dict(msg.body.get("roster"))
    except ValueError as exc:
        raise ProtocolError(f"bad roster: {exc}") from None


def ps_main(args: NodeArgs) -> None:
    """Entry point of a PS process."""
    ps = ParameterServer(args)
    try:
        ps.run()
    finally:
        ps.close()
