"""``dlsched k8s run`` (the controller) and ``dlsched k8s manifests`` (what to apply)."""

from __future__ import annotations

import logging
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

from dlsched.commands.common import one_line_errors
from dlsched.commands.config_options import Section, options_command
from dlsched.option_fields import Opt
from dlsched.schedulers.registry import make_scheduler

LOG_LEVELS = ("debug", "info", "warning", "error")
NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
"""A namespace name: an RFC 1123 label (at most 63 characters)."""
EXIT_GRACE_S = 2.0
"""Seconds a stopping controller waits for its round to end and its lease to be released
before it exits anyway (a Deployment's default grace period is 30 s; the bar here is 5 s, on a
loaded machine)."""


class OneLineFormatter(logging.Formatter):
    """``TIME LEVEL LOGGER: MESSAGE`` with ISO-8601 UTC times, every record on one line
    (newlines of messages and tracebacks shown as `` | ``)."""

    converter = time.gmtime  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__(
            "%(asctime)s.%(msecs)03dZ %(levelname)s %(name)s: %(message)s", "%Y-%m-%dT%H:%M:%S"
        )

    def format(self, record: logging.LogRecord) -> str:
        return " | ".join(line for line in super().format(record).splitlines() if line.strip())


def setup_logging(level: str) -> None:
    """Send every log record to stderr as one timestamped line, from ``level`` up."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    logging.getLogger("urllib3").setLevel(max(root.level, logging.ERROR))  # our retries log
    logging.getLogger("kubernetes").setLevel(max(root.level, logging.WARNING))


MANIFESTS = ("crd.yaml", "rbac.yaml", "fence-policy.yaml", "deployment.yaml", "example-dljob.yaml")
"""The files of ``deploy/`` in the order to apply them (the lease fence before the controller's
first write; not ``example-pytorchjob.yaml``: it needs Kubeflow's training-operator, whose CRD
`kubectl apply` would otherwise lack)."""


def manifests_text() -> str:
    """Every manifest, as one multi-document YAML stream."""
    folder = resources.files("dlsched.k8s") / "manifests"
    return "---\n".join(f"# {name}\n{(folder / name).read_text()}" for name in MANIFESTS)


def k8s_manifests() -> None:
    """Print the CRD, RBAC, the lease fence, the controller Deployment and an example DLJob
    (kubectl apply -f -)."""
    print(manifests_text(), end="")


@dataclass(frozen=True)
class ControllerOptions:
    """The options of ``dlsched k8s run``."""

    scheduler: Annotated[str, Opt(flags=("--scheduler", "-s"))] = "drf"
    """Scheduler name."""
    namespace: str = "default"
    """Namespace of the jobs."""
    kinds: str = "dljob,pytorchjob"
    """Job kinds to size, comma-separated: dljob, pytorchjob (those whose CRD is installed;
    PyTorchJobs labelled dlsched.io/managed=true)."""
    interval: Annotated[float, Opt(min=0.1, max=86400.0)] = 10.0
    """Seconds between rounds."""
    dry_run: Annotated[bool, Opt(flags=("--dry-run",))] = False
    """Log intended changes; write nothing."""
    bind: Annotated[bool, Opt(flags=("--bind",))] = False
    """Create each job's pods and bind them to nodes."""
    placement: str = "load_balance"
    """Placement policy: load_balance, pack, gang."""
    kubeconfig: Path | None = None
    """Kubeconfig file (default: in-cluster, else ~/.kube/config)."""
    metrics_port: Annotated[int, Opt(min=0, max=65535)] = 0
    """Serve Prometheus metrics here (0: off)."""
    max_events: Annotated[int, Opt(min=0)] = 100
    """Kubernetes Events recorded per round (one per change)."""
    lease_duration: Annotated[float, Opt(min=3.0, max=3600.0)] = 15.0
    """Seconds the leader lease lasts without renewal."""
    identity: str | None = None
    """This controller's name in the lease (default: host name and pid; with the lease fence
    deploy/fence-policy.yaml it must be the pod's name, as deploy/deployment.yaml passes it)."""
    log_level: str = "info"
    """Log from this level up: debug, info, warning, error (one line each)."""
    once: Annotated[bool, Opt(flags=("--once",))] = False
    """Run one round and exit."""
    events_out: Path | None = None
    """Write the controller's event log (submit/start/rescale/migrate/preempt/finish, as
    simulate --events-out) to this .csv or .parquet file when it stops; dlsched report draws
    it."""
    dashboard: str | None = None
    """[HOST:]PORT: serve a live dashboard of the rounds there (host 127.0.0.1 unless given),
    the report's views updating as jobs change. Needs dlsched[dashboard]."""


@options_command(Section(ControllerOptions))
def k8s_run(options: ControllerOptions) -> None:
    """Schedule the namespace's training jobs with a dlsched scheduler until stopped (SIGTERM,
    Ctrl-C: the round in progress stops writing, the lease is released, exit within 5 s)."""
    with one_line_errors():
        _check(options)
        setup_logging(options.log_level)
        controller = _controller(options)
        on_exit = _event_outputs(controller, options)
        if options.once:
            try:
                report = controller.reconcile()
            finally:
                controller.lease.release()
                on_exit()
            print(report.skipped or f"reclaimed {report.reclaimed}, refused {len(report.refused)}")
            return
    _run_until_signalled(controller, on_exit)


def _event_outputs(controller: Any, options: ControllerOptions) -> Callable[[], None]:
    """With ``--events-out`` or ``--dashboard``: record the rounds' events, serve the
    dashboard now; return what to do on the way out (stop it, write the log)."""
    from dlsched.commands.report import check_run_outputs

    if options.events_out is None and options.dashboard is None:
        return lambda: None
    from dlsched.k8s.event_record import ControllerLog
    from dlsched.report.data import RunInput

    check_run_outputs(None, options.events_out)
    recorder = controller.event_log = ControllerLog(controller.clock)
    name = controller.scheduler.name

    def source() -> RunInput:
        log = recorder.log
        return RunInput("k8s", name, 0, log, recorder.trace_ids, now_s=log.clock())

    dashboard = _dashboard(source, options.dashboard)

    def on_exit() -> None:
        if dashboard is not None:
            dashboard.stop()
        if options.events_out is not None:
            from dlsched.sim.event_log import write_event_rows

            rows = recorder.log.rows(name, 0, recorder.trace_ids)
            write_event_rows(rows, options.events_out)

    return on_exit


def _dashboard(source: Callable[[], Any], address: str | None) -> Any:
    """The dashboard serving ``source`` at ``address`` ([HOST:]PORT), started; None if no
    address."""
    if address is None:
        return None
    from importlib.util import find_spec

    if find_spec("starlette") is None or find_spec("uvicorn") is None:
        raise ValueError("--dashboard needs the dashboard extra: pip install 'dlsched[dashboard]'")
    from dlsched.report.dashboard import Dashboard, parse_address

    dashboard = Dashboard(source, *parse_address(address)).start()
    logging.getLogger(__name__).info("dashboard: %s", dashboard.url)
    return dashboard


def _check(options: ControllerOptions) -> None:
    """`ValueError` naming ``--log-level`` or ``--namespace`` if it is not one."""
    if options.log_level.lower() not in LOG_LEVELS:
        raise ValueError(
            f"--log-level: must be one of {', '.join(LOG_LEVELS)}, got {options.log_level!r}"
        )
    namespace = options.namespace
    if len(namespace) > 63 or not NAMESPACE.match(namespace):
        raise ValueError(
            f"--namespace: {namespace!r} is not a namespace name (lower-case letters, digits "
            "and '-', at most 63, starting and ending with a letter or digit)"
        )


def _controller(options: ControllerOptions) -> Any:
    """The controller of ``options``, talking to a cluster that answers (its metrics served
    if ``--metrics-port``)."""
    try:
        from kubernetes import client

        from dlsched.k8s.controller import Controller
        from dlsched.k8s.kinds import KINDS
        from dlsched.k8s.metrics import Metrics, serve
    except ImportError as exc:
        raise ValueError(
            f"k8s run needs the k8s extra (pip install 'dlsched[k8s]'): {exc}"
        ) from None
    policy = make_scheduler(options.scheduler)
    wanted = [k.strip().lower() for k in options.kinds.split(",") if k.strip()]
    unknown = [k for k in wanted if k not in KINDS]
    if unknown or not wanted:
        raise ValueError(
            f"--kinds: unknown {', '.join(unknown) or '(none given)'} (known: {', '.join(KINDS)})"
        )
    api = client.ApiClient(_configuration(options.kubeconfig))
    _check_reachable(api)
    metrics = Metrics()
    controller = Controller(
        api,
        policy,
        namespace=options.namespace,
        kinds=wanted,
        interval_s=options.interval,
        dry_run=options.dry_run,
        bind=options.bind,
        placement=options.placement,
        identity=options.identity,
        lease_duration_s=options.lease_duration,
        metrics=metrics,
        max_events=options.max_events,
    )
    if options.metrics_port:
        serve(metrics, options.metrics_port)
    return controller


def _configuration(kubeconfig: Path | None) -> Any:
    """The client configuration: ``kubeconfig``, else in-cluster, else ~/.kube/config;
    `ValueError` (one line) for a file that is not a usable kubeconfig."""
    from kubernetes import client, config

    configuration = client.Configuration()
    if kubeconfig is None:
        try:
            config.load_incluster_config(client_configuration=configuration)
            return configuration
        except config.ConfigException:
            pass
    where = str(kubeconfig) if kubeconfig is not None else "~/.kube/config"
    if kubeconfig is not None and not kubeconfig.is_file():
        raise ValueError(f"--kubeconfig: no file {kubeconfig}")
    try:
        config.load_kube_config(
            None if kubeconfig is None else str(kubeconfig), client_configuration=configuration
        )
    except (config.ConfigException, OSError) as exc:
        if kubeconfig is None:
            raise ValueError(f"no cluster to talk to: {' '.join(str(exc).split())}") from None
        raise ValueError(f"--kubeconfig {where}: {' '.join(str(exc).split())}") from None
    except Exception as exc:  # the loader's TypeError/AttributeError on a file that is no YAML map
        raise ValueError(
            f"--kubeconfig {where}: not a kubeconfig ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())})"
        ) from None
    return configuration


def _check_reachable(api: Any) -> None:
    """`ValueError` (one line) if the API server does not answer ``GET /version`` within
    about 5 s."""
    from dlsched.k8s.rest import BadReply, JsonApi

    host = api.configuration.host
    rest = JsonApi(api)
    deadline = time.monotonic() + 5.0
    while True:
        try:
            rest.request("GET", "/version", timeout=2.0)
            return
        except BadReply as exc:
            raise ValueError(f"{host} is not a Kubernetes API server: {exc}") from None
        except Exception as exc:
            status = getattr(exc, "status", None)
            if status is not None and status not in (429, 500, 502, 503, 504):
                return  # it answers (401/403/404 are for the rounds to report)
            if time.monotonic() > deadline:
                why = f"{status} {getattr(exc, 'reason', '')}" if status else type(exc).__name__
                raise ValueError(f"cannot reach the Kubernetes API at {host} ({why})") from None
            time.sleep(0.5)


def _run_until_signalled(controller: Any, on_exit: Callable[[], None]) -> None:
    """Run the loop in a thread until SIGTERM or SIGINT; then give the round
    `EXIT_GRACE_S` to stop writing and release the lease (which the loop does), run
    ``on_exit`` and exit."""
    stop = threading.Event()

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    loop = threading.Thread(target=controller.run, args=(stop,), name="reconcile", daemon=True)
    loop.start()
    while loop.is_alive() and not stop.wait(0.2):
        pass
    loop.join(timeout=EXIT_GRACE_S)
    if loop.is_alive():
        logging.getLogger(__name__).warning(
            "the round did not end within %.0f s (a request is hanging): exiting; the lease "
            "expires by itself",
            EXIT_GRACE_S,
        )
    try:
        on_exit()
    except (OSError, ValueError) as exc:
        logging.getLogger(__name__).error("--events-out: %s", exc)
    logging.shutdown()
    os._exit(0)  # the lease is released (or left to expire): no wait for module finalizers
