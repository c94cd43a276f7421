"""Checkpoints of learned policies: plain tensors next to a JSON card, loaded without unpickling.

A checkpoint is a directory holding two files:

* ``policy.pt`` — the network's ``state_dict`` saved with `torch.save`; it is read back with
  ``torch.load(..., weights_only=True)``, which refuses anything but tensors and plain
  containers, so a checkpoint from an untrusted source cannot run code.
* ``card.json`` — a `PolicyCard`: which algorithm and workload made it, the shape fields the
  observation and action spaces depend on (DL2: ``J`` job rows and ``L`` job types; DeepRM:
  its image size; …), seeds, steps, the validation metric and the date.

Loading checks the card's shape fields against what the caller expects and raises a one-line
`ValueError` naming the first mismatch (``checkpoint X: J is 20, this environment needs 40``).

Example::

    card = PolicyCard(algorithm="dl2", workload="dl2", shapes={"J": 40, "L": 8})
    save_checkpoint("runs/x", net.state_dict(), card)
    state, card = load_checkpoint("runs/x", algorithm="dl2", shapes={"J": 40, "L": 8})
    net.load_state_dict(state)
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from dlsched.rl.card_limits import validate_card_data
from dlsched.rl.files import CARD_FILE, POLICY_FILE


@dataclass
class PolicyCard:
    """What a checkpoint is and how it was made (stored as ``card.json``).

    Attributes:
        algorithm: algorithm name (``"dl2"``, ``"deeprm"``, ``"sched2"``).
        workload: workload it was trained on (registry name).
        workload_params: the workload's generator parameters (servers, load, num_jobs, …).
        shapes: integer fields the network's input/output sizes depend on (``{"J": 40,
            "L": 8, "obs_dim": 569, "num_actions": 121}``); checked on load.
        seeds: named seed lists (``{"train": [...], "validation": [...]}``).
        steps: named step counts (``{"sl": 2000, "rl": 500}``), in gradient updates.
        validation: named validation metrics (``{"avg_jct_s": 5800.0, "drf_avg_jct_s": ...}``).
        hyperparams: the algorithm's hyper-parameters (JSON-serialisable).
        date: ISO-8601 UTC time the card was made.
        notes: free text (teacher, how it was selected, …).
        trained_setting: the setting the policy is meant for, ``{"workload": "deeprm",
            "params": {"load": [0.3, 1.9], "servers": 1}}`` (keys of ``params`` are names in
            the workload's ``params``; a number, a ``[low, high]`` range or any other exact
            value); a run outside it logs a notice (`dlsched.rl.setting`). Empty: not said.
    """

    algorithm: str
    workload: str
    workload_params: dict[str, Any] = field(default_factory=dict)
    shapes: dict[str, int] = field(default_factory=dict)
    seeds: dict[str, list[int]] = field(default_factory=dict)
    steps: dict[str, int] = field(default_factory=dict)
    validation: dict[str, float] = field(default_factory=dict)
    hyperparams: dict[str, Any] = field(default_factory=dict)
    date: str = field(
        default_factory=lambda: _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    )
    notes: str = ""
    trained_setting: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        """The card as indented JSON text."""
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @staticmethod
    def from_dict(data: Mapping[str, Any], where: str = "card") -> PolicyCard:
        """Build a card from parsed JSON; ValueError naming ``where`` if fields are wrong."""
        known = set(PolicyCard.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{where}: unknown card field(s) {', '.join(unknown)}")
        for required in ("algorithm", "workload"):
            if not isinstance(data.get(required), str):
                raise ValueError(f"{where}: field {required!r} must be a string")
        shapes = data.get("shapes", {})
        if not isinstance(shapes, dict) or not all(isinstance(v, int) for v in shapes.values()):
            raise ValueError(f"{where}: 'shapes' must map names to integers")
        validate_card_data(data, where)  # types and size limits, before anything is allocated
        return PolicyCard(**dict(data))


def _paths(path: str | Path) -> tuple[Path, Path]:
    """(policy file, card file) for a checkpoint directory or either of its two files."""
    p = Path(path)
    if p.name in (POLICY_FILE, CARD_FILE):
        p = p.parent
    return p / POLICY_FILE, p / CARD_FILE


def save_checkpoint(
    directory: str | Path, state_dict: Mapping[str, torch.Tensor], card: PolicyCard
) -> Path:
    """Write ``policy.pt`` (tensors only) and ``card.json`` into ``directory`` (created).

    Args:
        directory: checkpoint directory.
        state_dict: the network's parameters (``module.state_dict()``); tensors are detached
            and copied to CPU so the file loads anywhere.
        card: what the checkpoint is.

    Returns:
        The directory.
    """
    policy, card_path = _paths(directory)
    policy.parent.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for name, value in state_dict.items():
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"state_dict entry {name!r} is not a tensor")
        tensors[name] = value.detach().to("cpu").clone()
    tmp = policy.with_suffix(".tmp")
    torch.save(tensors, tmp)
    tmp.replace(policy)
    card_path.write_text(card.to_json(), encoding="utf-8")
    return policy.parent


def read_card(path: str | Path) -> PolicyCard:
    """Read only the card of a checkpoint (directory, ``policy.pt`` or ``card.json``)."""
    _, card_path = _paths(path)
    try:
        data = json.loads(card_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"checkpoint {card_path.parent}: no {CARD_FILE}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"checkpoint {card_path}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError(f"checkpoint {card_path}: expected a JSON object")
    return PolicyCard.from_dict(data, where=f"checkpoint {card_path}")


def check_card(
    card: PolicyCard,
    *,
    algorithm: str | None = None,
    shapes: Mapping[str, int] | None = None,
    where: str = "checkpoint",
) -> None:
    """Raise a one-line ValueError if ``card`` was made for another algorithm or shape.

    Args:
        card: the checkpoint's card.
        algorithm: the algorithm the caller runs (None: any).
        shapes: shape fields the caller's network needs; each must be present and equal.
        where: how to name the checkpoint in the message.
    """
    if algorithm is not None and card.algorithm != algorithm:
        raise ValueError(f"{where}: made by algorithm {card.algorithm!r}, expected {algorithm!r}")
    for name, want in (shapes or {}).items():
        have = card.shapes.get(name)
        if have is None:
            raise ValueError(f"{where}: card has no shape field {name!r} (needs {want})")
        if have != want:
            raise ValueError(f"{where}: {name} is {have}, this setting needs {want}")


def load_checkpoint(
    path: str | Path,
    *,
    algorithm: str | None = None,
    shapes: Mapping[str, int] | None = None,
) -> tuple[dict[str, torch.Tensor], PolicyCard]:
    """Load a checkpoint's tensors and card, checking algorithm and shape fields first.

    Args:
        path: checkpoint directory (or its ``policy.pt`` / ``card.json``).
        algorithm: expected ``card.algorithm`` (None: any).
        shapes: expected shape fields, e.g. ``{"J": 40, "L": 8}``.

    Returns:
        ``(state_dict, card)``; the state dict holds CPU tensors only.

    Raises:
        FileNotFoundError: a file is missing.
        ValueError: the card does not match, or the weights file holds anything but tensors.
    """
    policy, card_path = _paths(path)
    card = read_card(card_path)
    check_card(card, algorithm=algorithm, shapes=shapes, where=f"checkpoint {policy.parent}")
    if not policy.exists():
        raise FileNotFoundError(f"checkpoint {policy.parent}: no {POLICY_FILE}")
    try:
        state = torch.load(policy, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises UnpicklingError/RuntimeError for foreign content
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"checkpoint {policy}: cannot load weights safely ({first})") from None
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise ValueError(f"checkpoint {policy}: expected a mapping of names to tensors")
    return state, card
