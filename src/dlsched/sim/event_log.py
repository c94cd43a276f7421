"""The event log of a run: every allocation change the one executor made, with submissions,
finishes and the cluster's servers, as one table (CSV or Parquet by the suffix).

The simulator, the live runtime and the Kubernetes controller share the `Executor`, which
records each change it made into an `EventLog` when one is attached (``executor.events``; None,
the default, costs one attribute test a change). The backend records submissions and finishes
and says what time it is (``clock``). ``dlsched simulate --events-out`` writes the table,
``--report`` draws it (`dlsched.report`), ``dlsched report FILE`` draws one written earlier.

One row an event, in the order they happened (time order; at one instant, finishes and
submissions before the decision's shrinks, then its growths). Columns:

``time_s``
    seconds from the workload's origin (simulated time, or the live run's clock).
``scheduler``, ``seed``
    the run the row belongs to (one file may hold several runs: ``compare --events-out``).
``trace_id``, ``job_id``
    the trace's own job ID (text; the simulator's id as text for generated workloads) and the
    simulator's integer id; empty and -1 on ``server`` rows.
``kind``
    ``server`` (one row a server at time 0: the cluster), ``submit``, ``start`` (from holding
    nothing: a first start or a resume), ``rescale`` (other task counts), ``migrate`` (the same
    counts on other servers), ``preempt`` (to holding nothing, unfinished), ``finish``, ``fail``
    (a live job that failed for good: it ends holding nothing, unfinished).
``gpus``, ``workers``, ``ps``
    GPUs and tasks the job holds after the event (``server`` rows: the server's GPUs, 0, 0).
``servers``
    where the job holds them after the event: ``server:gpus`` pairs by server, space-separated
    (``"3:4 7:2"``; a server holding only CPU tasks shows ``:0``); empty when it holds nothing;
    ``server`` rows: the server's index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from dlsched.core import Allocation, Cluster, JobRun

KINDS = ("server", "submit", "start", "rescale", "migrate", "preempt", "finish", "fail")
"""The event kinds, by code (`EventLog.kind` holds the codes)."""
SERVER, SUBMIT, START, RESCALE, MIGRATE, PREEMPT, FINISH, FAIL = range(len(KINDS))

EVENT_COLUMNS = (
    "time_s",
    "scheduler",
    "seed",
    "trace_id",
    "job_id",
    "kind",
    "gpus",
    "workers",
    "ps",
    "servers",
)
_INT_COLUMNS = ("seed", "job_id", "gpus", "workers", "ps")
_TEXT_COLUMNS = ("scheduler", "trace_id", "kind", "servers")


def no_clock() -> float:
    """The clock of a log that is only read (read back from a file, a copy): never asked."""
    raise RuntimeError("this event log is a copy: nothing more is recorded into it")


def _gpus_by_server(run: JobRun, alloc: Allocation) -> tuple[int, str]:
    """GPUs ``alloc`` holds for ``run``'s job, and its ``server:gpus`` text."""
    spec = run.spec
    per: dict[int, float] = {}
    for server, n in alloc.workers:
        per[server] = per.get(server, 0.0) + n * spec.worker_demand.gpu
    for server, n in alloc.ps:
        per[server] = per.get(server, 0.0) + n * spec.ps_demand.gpu
    gpus = {server: round(g) for server, g in per.items()}
    return sum(gpus.values()), " ".join(f"{s}:{gpus[s]}" for s in sorted(gpus))


class _Recorder(Protocol):
    """What `EventLog.attach` needs of an executor (`dlsched.sim.executor.Executor`)."""

    cluster: Cluster
    events: EventLog | None


@dataclass
class EventLog:
    """Events of one run as columns of equal length (see the module docstring).

    Args:
        clock: the run's time now (s), read at each event.
    """

    clock: Callable[[], float]
    time_s: list[float] = field(default_factory=list)
    job_id: list[int] = field(default_factory=list)
    kind: list[int] = field(default_factory=list)
    gpus: list[int] = field(default_factory=list)
    workers: list[int] = field(default_factory=list)
    ps: list[int] = field(default_factory=list)
    servers: list[str] = field(default_factory=list)

    @staticmethod
    def attach(executor: _Recorder, clock: Callable[[], float]) -> EventLog:
        """A new log of ``executor``'s changes (its cluster's servers recorded), timed by
        ``clock``."""
        log = EventLog(clock)
        log.cluster(row[0] for row in executor.cluster.capacity_rows)
        executor.events = log
        return log

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["clock"] = None  # a result crossing processes keeps its events, not the run's clock
        return state

    def _add(self, job_id: int, kind: int, gpus: int, workers: int, ps: int, servers: str) -> None:
        self.append(self.clock(), job_id, kind, gpus, workers, ps, servers)

    def append(
        self, time_s: float, job_id: int, kind: int, gpus: int, workers: int, ps: int, servers: str
    ) -> None:
        """One row at ``time_s`` (s), as a reader of a written log adds it back."""
        self.time_s.append(time_s)
        self.job_id.append(job_id)
        self.kind.append(kind)
        self.gpus.append(gpus)
        self.workers.append(workers)
        self.ps.append(ps)
        self.servers.append(servers)

    def cluster(self, gpus_per_server: Iterable[float]) -> None:
        """Record the servers (one ``server`` row each, at time 0)."""
        for k, gpus in enumerate(gpus_per_server):
            self.time_s.append(0.0)
            self.job_id.append(-1)
            self.kind.append(SERVER)
            self.gpus.append(round(gpus))
            self.workers.append(0)
            self.ps.append(0)
            self.servers.append(str(k))

    def submit(self, job_id: int) -> None:
        self._add(job_id, SUBMIT, 0, 0, 0, "")

    def finish(self, job_id: int) -> None:
        self._add(job_id, FINISH, 0, 0, 0, "")

    def fail(self, job_id: int) -> None:
        self._add(job_id, FAIL, 0, 0, 0, "")

    def change(self, run: JobRun, old: Allocation, new: Allocation) -> None:
        """Record the executor's change of ``run`` from ``old`` to ``new`` (they differ)."""
        if new.is_empty:
            self._add(run.job_id, PREEMPT, 0, 0, 0, "")
            return
        if old.is_empty:
            kind = START
        elif new.num_workers != old.num_workers or new.num_ps != old.num_ps:
            kind = RESCALE
        else:
            kind = MIGRATE
        gpus, text = _gpus_by_server(run, new)
        self._add(run.job_id, kind, gpus, new.num_workers, new.num_ps, text)

    def __len__(self) -> int:
        return len(self.time_s)

    def rows(
        self, scheduler: str, seed: int, trace_ids: Mapping[int, str] | None = None
    ) -> list[dict[str, Any]]:
        """The table's rows of this run (``trace_ids``: job id → the trace's own ID)."""
        ids = trace_ids or {}
        return [
            {
                "time_s": t,
                "scheduler": scheduler,
                "seed": seed,
                "trace_id": "" if j < 0 else ids.get(j, str(j)),
                "job_id": j,
                "kind": KINDS[k],
                "gpus": g,
                "workers": w,
                "ps": p,
                "servers": s,
            }
            for t, j, k, g, w, p, s in zip(
                self.time_s,
                self.job_id,
                self.kind,
                self.gpus,
                self.workers,
                self.ps,
                self.servers,
                strict=True,
            )
        ]


def write_event_rows(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Write event rows (`EventLog.rows`) to ``path``: Parquet for ``.parquet``, else CSV."""
    if path.suffix.lower() == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        def arrow_type(name: str) -> Any:
            if name in _TEXT_COLUMNS:
                return pa.string()
            return pa.int64() if name in _INT_COLUMNS else pa.float64()

        schema = pa.schema([(name, arrow_type(name)) for name in EVENT_COLUMNS])
        columns = {name: [row[name] for row in rows] for name in EVENT_COLUMNS}
        pq.write_table(pa.table(columns, schema=schema), path)
        return
    from dlsched.csv_rows import write_csv

    write_csv(path, rows, EVENT_COLUMNS)
