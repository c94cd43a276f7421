"""``dlsched k8s run`` (the controller) and ``dlsched k8s manifests`` (what to apply)."""

from __future__ import annotations

import logging
import signal
import threading
from importlib import resources
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from dlsched.commands.common import one_line_errors
from dlsched.schedulers.registry import make_scheduler

MANIFESTS = ("crd.yaml", "rbac.yaml", "deployment.yaml", "example-dljob.yaml")
"""The files of ``deploy/`` in the order to apply them (not ``example-pytorchjob.yaml``: it
needs Kubeflow's training-operator, whose CRD `kubectl apply` would otherwise lack)."""


def manifests_text() -> str:
    """Every manifest, as one multi-document YAML stream."""
    folder = resources.files("dlsched.k8s") / "manifests"
    return "---\n".join(f"# {name}\n{(folder / name).read_text()}" for name in MANIFESTS)


def k8s_manifests() -> None:
    """Print the CRD, RBAC, the controller Deployment and an example DLJob (kubectl apply -f -)."""
    print(manifests_text(), end="")


def k8s_run(
    scheduler: Annotated[str, typer.Option("--scheduler", "-s", help="Scheduler name.")] = "drf",
    namespace: Annotated[str, typer.Option(help="Namespace of the jobs.")] = "default",
    kinds: Annotated[
        str,
        typer.Option(
            help="Job kinds to size, comma-separated: dljob, pytorchjob (those whose CRD is "
            "installed; PyTorchJobs labelled dlsched.io/managed=true)."
        ),
    ] = "dljob,pytorchjob",
    interval: Annotated[
        float, typer.Option(min=0.1, max=86400.0, help="Seconds between rounds.")
    ] = 10.0,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Log intended changes; write nothing.")
    ] = False,
    bind: Annotated[
        bool, typer.Option("--bind", help="Create each job's pods and bind them to nodes.")
    ] = False,
    placement: Annotated[
        str, typer.Option(help="Placement policy: load_balance, pack, gang.")
    ] = "load_balance",
    kubeconfig: Annotated[
        Path | None,
        typer.Option(help="Kubeconfig file (default: in-cluster, else ~/.kube/config)."),
    ] = None,
    metrics_port: Annotated[
        int, typer.Option(min=0, max=65535, help="Serve Prometheus metrics here (0: off).")
    ] = 0,
    max_events: Annotated[
        int, typer.Option(min=0, help="Kubernetes Events recorded per round (one per change).")
    ] = 100,
    once: Annotated[bool, typer.Option("--once", help="Run one round and exit.")] = False,
) -> None:
    """Schedule the namespace's training jobs with a dlsched scheduler until stopped (SIGTERM,
    Ctrl-C)."""
    from kubernetes import client, config

    from dlsched.k8s.controller import Controller
    from dlsched.k8s.kinds import KINDS
    from dlsched.k8s.metrics import Metrics, serve

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    with one_line_errors():
        policy = make_scheduler(scheduler)
        wanted = [k.strip().lower() for k in kinds.split(",") if k.strip()]
        unknown = [k for k in wanted if k not in KINDS]
        if unknown or not wanted:
            raise ValueError(
                f"--kinds: unknown {', '.join(unknown) or '(none given)'} "
                f"(known: {', '.join(KINDS)})"
            )
        if kubeconfig is not None:
            if not kubeconfig.is_file():
                raise ValueError(f"--kubeconfig: no file {kubeconfig}")
            config.load_kube_config(str(kubeconfig))
        else:
            try:
                config.load_incluster_config()
            except config.ConfigException:
                try:
                    config.load_kube_config()
                except (config.ConfigException, OSError) as exc:
                    raise ValueError(f"no cluster to talk to: {exc}") from None
        metrics = Metrics()
        controller = Controller(
            client.ApiClient(),
            policy,
            namespace=namespace,
            kinds=wanted,
            interval_s=interval,
            dry_run=dry_run,
            bind=bind,
            placement=placement,
            metrics=metrics,
            max_events=max_events,
        )
        if metrics_port:
            serve(metrics, metrics_port)
        if once:
            report = controller.reconcile()
            print(report.skipped or f"reclaimed {report.reclaimed}, refused {len(report.refused)}")
            return
        stop = threading.Event()

        def handler(_signum: int, _frame: FrameType | None) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
        controller.run(stop)
