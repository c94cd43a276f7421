"""Checkpoints: plain tensors + JSON card, shape checks, no arbitrary unpickling."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from dlsched.rl.checkpoint import (
    CARD_FILE,
    POLICY_FILE,
    PolicyCard,
    load_checkpoint,
    read_card,
    save_checkpoint,
)


def _card(j: int = 40) -> PolicyCard:
    return PolicyCard(
        algorithm="dl2", workload="dl2", shapes={"J": j, "L": 8}, seeds={"train": [1]}
    )


def test_round_trip(tmp_path: Path) -> None:
    net = torch.nn.Linear(3, 2)
    save_checkpoint(tmp_path / "ck", net.state_dict(), _card())
    state, card = load_checkpoint(tmp_path / "ck", algorithm="dl2", shapes={"J": 40, "L": 8})
    other = torch.nn.Linear(3, 2)
    other.load_state_dict(state)
    assert torch.equal(other.weight, net.weight)
    assert card.shapes == {"J": 40, "L": 8}
    assert read_card(tmp_path / "ck" / POLICY_FILE).seeds == {"train": [1]}


def test_wrong_shape_is_one_line_error(tmp_path: Path) -> None:
    save_checkpoint(tmp_path, torch.nn.Linear(3, 2).state_dict(), _card(j=20))
    with pytest.raises(ValueError, match="J is 20, this setting needs 40") as info:
        load_checkpoint(tmp_path, shapes={"J": 40, "L": 8})
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="algorithm 'dl2'"):
        load_checkpoint(tmp_path, algorithm="deeprm")


def test_refuses_pickled_objects(tmp_path: Path) -> None:
    save_checkpoint(tmp_path, {"w": torch.zeros(2)}, _card())
    torch.save({"w": torch.zeros(2), "evil": Path("x")}, tmp_path / POLICY_FILE)
    with pytest.raises(ValueError, match=r"cannot load weights safely|names to tensors"):
        load_checkpoint(tmp_path)


def test_bad_card(tmp_path: Path) -> None:
    save_checkpoint(tmp_path, {"w": torch.zeros(2)}, _card())
    (tmp_path / CARD_FILE).write_text('{"algorithm": "dl2", "workload": "dl2", "x": 1}')
    with pytest.raises(ValueError, match="unknown card field"):
        load_checkpoint(tmp_path)
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "missing")
