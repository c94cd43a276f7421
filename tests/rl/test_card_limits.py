"""Policy cards are checked against type and size limits before any network is allocated, and
tensor files from elsewhere are never unpickled (issue 15, item 6)."""

from __future__ import annotations

import json
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.rl.card_limits import MAX_PARAMETERS, validate_card_data
from dlsched.rl.checkpoint import read_card

PAPERS = Path(__file__).resolve().parents[2] / "src" / "dlsched" / "papers"
SHIPPED = {
    "dl2": PAPERS / "dl2" / "policies" / "dl2",
    "sched2": PAPERS / "sched2" / "policies" / "sched2_dqn",  # the Q-network's card limits
    "deeprm": PAPERS / "deeprm" / "policies" / "load0.7",
}


def copy_with_card(
    tmp_path: Path, algorithm: str, change: Callable[[dict[str, Any]], None]
) -> Path:
    """A copy of a shipped checkpoint whose card ``change`` edits."""
    where = tmp_path / f"{algorithm}-copy"
    shutil.copytree(SHIPPED[algorithm], where)
    card = json.loads((where / "card.json").read_text())
    change(card)
    (where / "card.json").write_text(json.dumps(card))
    return where


def no_allocation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if any loader gets as far as building a network."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a network was built from an invalid card")

    import dlsched.papers.deeprm.policy as deeprm_policy
    import dlsched.papers.dl2.network as dl2
    import dlsched.papers.sched2.policy as sched2_policy

    monkeypatch.setattr(dl2, "make_policy", refuse)
    monkeypatch.setattr(deeprm_policy, "DeepRMPolicyNet", refuse)
    monkeypatch.setattr(sched2_policy, "make_net", refuse)


def one_line_cli_error(spec: str, workload: str) -> str:
    result = CliRunner().invoke(app, ["simulate", "-w", workload, "-o", "num_jobs=5", "-s", spec])
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), repr(result.exception)
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def test_shipped_cards_are_within_the_limits():
    for path in [
        *SHIPPED.values(),
        PAPERS / "dl2" / "policies" / "offline_rl",
        PAPERS / "deeprm" / "policies" / "load1.3",
        PAPERS / "sched2" / "policies" / "sched2",
    ]:
        read_card(path)


def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(card: dict[str, Any]) -> None:
        node = card
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


OVERSIZED = [
    ("dl2", ("hyperparams", "hidden"), [200000, 200000], "width"),  # 160 GB
    ("dl2", ("hyperparams", "hidden"), [4096] * 17, "layer"),
    ("deeprm", ("hyperparams", "hidden"), [1000000000], "width"),  # 35 TB
    ("deeprm", ("shapes", "T"), 900000, "weights"),
    ("sched2", ("hyperparams", "hidden"), 100000, "width"),
    ("sched2", ("shapes", "N"), 2_000_000, "shape"),
    ("dl2", ("shapes", "obs_dim"), 1_000_000, "weights"),
]
WRONG_TYPES = [
    ("dl2", ("hyperparams", "hidden"), 256, "hidden"),  # a sched2-style int: was a TypeError
    ("dl2", ("hyperparams", "hidden"), ["64", "64"], "width"),
    ("dl2", ("hyperparams", "J"), "40", "J"),
    ("dl2", ("hyperparams", "job_types"), 8, "job_types"),
    ("dl2", ("hyperparams", "arch"), ["rows"], "arch"),
    ("deeprm", ("hyperparams", "hidden"), [1e9], "width"),
    ("deeprm", ("hyperparams", "hidden"), [True], "width"),
    ("deeprm", ("workload_params", "load"), "0.7", "load"),
    ("deeprm", ("hyperparams", "action_selection"), 1, "action_selection"),
    ("sched2", ("hyperparams", "server_out"), [16, 16], "server_out"),
    ("sched2", ("shapes", "N"), 15.0, "shape"),
    ("sched2", ("seeds", "train"), "0", "seeds"),
    ("sched2", ("validation", "avg_jct_s"), "fast", "validation"),
    ("dl2", ("hyperparams",), [], "hyperparams"),
    ("dl2", ("notes",), 5, "notes"),
]


@pytest.mark.parametrize(("algorithm", "path", "value", "needle"), OVERSIZED + WRONG_TYPES)
def test_a_bad_card_is_refused_in_one_line_before_allocation(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    algorithm: str,
    path: tuple[str, ...],
    value: Any,
    needle: str | None,
):
    where = copy_with_card(tmp_path, algorithm, _set(path, value))
    no_allocation(monkeypatch)
    with pytest.raises(ValueError) as caught:
        read_card(where)
    message = str(caught.value)
    assert "\n" not in message and str(where) in message
    if needle is not None:
        assert needle in message
    workload = {"dl2": "dl2", "deeprm": "deeprm", "sched2": "sched2"}[algorithm]
    line = one_line_cli_error(f"{algorithm}:{where}", workload)
    assert str(where) in line


def test_another_papers_policy_is_refused_by_algorithm(monkeypatch: pytest.MonkeyPatch):
    no_allocation(monkeypatch)
    for spec, workload in (
        (f"dl2:{SHIPPED['sched2']}", "dl2"),
        (f"offline-rl:{SHIPPED['deeprm']}", "dl2"),
        (f"sched2:{SHIPPED['dl2']}", "sched2"),
        (f"deeprm:{SHIPPED['sched2']}", "deeprm"),
    ):
        assert "made by algorithm" in one_line_cli_error(spec, workload)


def test_the_budget_counts_weights():
    card = json.loads((SHIPPED["dl2"] / "card.json").read_text())
    validate_card_data(card)
    card["hyperparams"]["hidden"] = [4096] * 16  # every width allowed, but too many weights
    with pytest.raises(ValueError, match=f"{MAX_PARAMETERS:,}"):
        validate_card_data(card, "card")


# -- DL2's online_state.pt -------------------------------------------------------------------


class _RunsCode:
    """Unpickling this would create a file: proof that nothing is unpickled."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(self.marker),))


def _online_copy(tmp_path: Path, content: bytes) -> Path:
    where = tmp_path / "dl2-online"
    shutil.copytree(SHIPPED["dl2"], where)
    (where / "online_state.pt").write_bytes(content)
    return where


@pytest.mark.parametrize("kind", ["garbage", "malicious", "wrong-structure", "empty"])
def test_a_bad_online_state_is_refused_in_one_line(tmp_path: Path, kind: str):
    import torch

    from dlsched.papers.dl2.online import load_dl2_online

    marker = tmp_path / "pwned"
    if kind == "garbage":
        where = _online_copy(tmp_path, b"\x80\x04not a pickle at all" * 10)
    elif kind == "malicious":
        where = _online_copy(tmp_path, pickle.dumps({"value": _RunsCode(marker)}))
    elif kind == "empty":
        where = _online_copy(tmp_path, b"")
    else:
        where = _online_copy(tmp_path, b"")
        torch.save({"value": {"w": torch.zeros(3)}}, where / "online_state.pt")
    with pytest.raises(ValueError) as caught:
        load_dl2_online(where)
    assert "\n" not in str(caught.value) and "online_state.pt" in str(caught.value)
    assert not marker.exists()
