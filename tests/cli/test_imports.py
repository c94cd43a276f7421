"""The CLI and the heuristic schedulers must start without importing PyTorch."""

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "code",
    [
        "import dlsched.cli",
        "from dlsched.schedulers.registry import make_scheduler\n"
        "make_scheduler('fifo'); make_scheduler('drf')",
    ],
)
def test_light_entry_points_do_not_import_torch(code: str) -> None:
    probe = f"{code}\nimport sys\nprint('torch' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False", result.stderr


@pytest.mark.slow
def test_python_m_dlsched_runs_the_cli() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dlsched", "list"], capture_output=True, text=True, check=True
    )
    assert "efficient-srtf" in result.stdout


def test_package_is_typed() -> None:
    from importlib.resources import files

    assert files("dlsched").joinpath("py.typed").is_file()


LAZY = (
    "torch",
    "scipy",
    "gymnasium",
    "typer.rich_utils",
    "dlsched.schedulers.srtf",
    "pandas",
    "dlsched.commands.compare",
    "dlsched.commands.live",
    "dlsched.commands.k8s",
    "dlsched.papers.dl2.command",
    "dlsched.papers.deeprm.command",
    "dlsched.papers.sched2.command",
    "dlsched.papers.example.command",
    "multiprocessing",
    "concurrent.futures",
    "numpy.ma",
    "rich",
)
"""What ``dlsched simulate -s fifo`` on a generated workload does not need (issue 18, point 4):
PyTorch, SciPy (its optimiser came with the SRTF and Optimus modules when the scheduler registry
imported every policy), Gymnasium (``import dlsched`` registers its ids only once Gymnasium is
imported), Typer's Rich help module (needed for help only), any other policy module, pandas
(the trace readers': every command's trace options are built at start-up, issue 34), and the
other commands' modules (``compare``, ``live``, ``k8s``, ``train NAME``: built on first use,
`dlsched.cli_lazy`, issue 34), nor a process pool (a sweep's: ``labelled`` shares its module).
Nor, for ``--json`` off a terminal, ``numpy.ma`` (``np.median`` and ``np.percentile`` import it:
`dlsched.sim.order_stats`) or Rich (no table, no help, no bar: the consoles are made on first
use and progress off a terminal is `dlsched.commands.progress_lines`), ~35 ms of start-up
together (issue 34)."""


@pytest.mark.slow
@pytest.mark.parametrize(
    "workload", [["-w", "deeprm", "-o", "num_jobs=5"], ["-w", "philly:ee9e8c", "-o", "max_jobs=20"]]
)
def test_a_simulate_run_imports_only_what_it_uses(workload: list[str]) -> None:
    """The packaged Philly trace is read without pandas too (`philly_columns`)."""
    probe = (
        "import sys\nfrom dlsched.cli import main\n"
        f"sys.argv = ['dlsched', 'simulate', *{workload!r}, '-s', 'fifo', '--json']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print([m for m in {LAZY!r} if m in sys.modules])"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stderr
    assert '"scheduler": "fifo"' in result.stdout


def test_import_dlsched_registers_the_envs_when_gymnasium_comes_after() -> None:
    probe = (
        "import sys, dlsched\nprint('gymnasium' in sys.modules)\n"
        "import gymnasium\nprint(sorted(i for i in gymnasium.registry if 'dlsched' in i))\n"
        "print(type(gymnasium.make('dlsched/DeepRM-v0').unwrapped).__name__)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.split("\n")[:3] == [
        "False",
        "['dlsched/DL2-v0', 'dlsched/DL2Slot-v0', 'dlsched/DeepRM-v0', 'dlsched/SCED2-v0']",
        "DeepRMEnv",
    ]


@pytest.mark.slow
def test_help_is_still_widened_off_a_terminal() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dlsched", "simulate", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH")},
    )
    assert max(len(line) for line in result.stdout.splitlines()) > 80
