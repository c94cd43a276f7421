"""``deeprm:paper@LOAD``: the paper-method policy trained on at one load, found by its card."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dlsched.papers.deeprm import fits
from dlsched.schedulers.registry import make_scheduler


def _folder(root: Path, name: str, load: float) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "card.json").write_text(json.dumps({"workload_params": {"load": load}}))
    return folder


@pytest.fixture
def loads_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "paper_loads"
    monkeypatch.setattr(fits, "PAPER_LOAD_DIR", root)
    _folder(root, "load1.9", 1.9)
    _folder(root, "load1.5", 1.5)
    return root


def test_paper_at_a_load_runs_the_folder_trained_at_that_load(loads_dir: Path) -> None:
    assert fits.policy_path("paper@1.9") == loads_dir / "load1.9"
    assert fits.policy_path("paper@1.50") == loads_dir / "load1.5"
    assert fits.policy_path("paper") == fits.PAPER_POLICY


@pytest.mark.parametrize(
    ("arg", "message"),
    [("paper@1.7", "no policy trained at load 1.7"), ("paper@x", "'x' is not a load")],
)
def test_paper_at_an_unshipped_load_names_the_shipped_ones(
    loads_dir: Path, arg: str, message: str
) -> None:
    with pytest.raises(ValueError, match=f"{message} \\(shipped: paper@1.5, paper@1.9\\)"):
        fits.policy_path(arg)
    with pytest.raises(ValueError, match=message):
        make_scheduler(f"deeprm:{arg}")


def test_per_load_folders_are_not_paper_state_load_policies() -> None:
    # deeprm:LOAD picks among shipped_policies by nearest load: paper_loads must not be one
    assert fits.PAPER_LOAD_DIR not in fits.shipped_policies()
    assert fits.policy_path("1.9").parent == fits.POLICY_DIR


def test_each_shipped_per_load_policy_was_trained_on_at_its_load_only() -> None:
    found = fits.paper_load_policies()
    assert 1.3 in found
    for load, folder in found.items():
        card = json.loads((folder / "card.json").read_text(encoding="utf-8"))
        assert folder.name == f"load{load:g}"
        assert card["hyperparams"]["loads"] == [load]
        assert card["hyperparams"]["mask_invalid"] is False  # the paper's: every action offered
        assert "policies/paper" in card["hyperparams"]["init_from"]  # or a per-load one
        assert f"deeprm:paper@{load:g}" in card["notes"]


def test_card_notes_of_a_one_load_warm_start_say_so() -> None:
    from dlsched.papers.deeprm.paper import PaperConfig, card_notes

    one = card_notes(PaperConfig(loads=(1.9,), init_from="src/policies/paper"))
    assert "one network for loads" not in one and "from a random network" not in one
    assert "Started from the network of src/policies/paper" in one
    several = card_notes(PaperConfig())
    assert "one network for loads 1.1–1.9" in several and "from a random network" in several


def test_fresh_jobsets_are_new_every_iteration_and_never_validation_or_test_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dlsched.papers.deeprm.config import FRESH_SEED_BASE
    from dlsched.papers.deeprm.paper import PaperConfig, PaperReinforce

    config = PaperConfig(loads=(1.7,), jobsets=3, episodes=2, horizon_steps=10, fresh_jobsets=True)
    trainer = PaperReinforce(config)
    seen: list[list[tuple[float, ...]]] = []

    def rollout(jobsets: list) -> dict:  # what each iteration trains on, by arrival times
        seen.append([(*js.arrival.tolist(), *js.length.tolist()) for js in jobsets])
        raise StopIteration

    monkeypatch.setattr(trainer, "_rollout", rollout)
    for iteration in (0, 1, 0):
        with pytest.raises(StopIteration):
            trainer.part(iteration, 0, range(3))
    fixed = [(*js.arrival.tolist(), *js.length.tolist()) for js in trainer.jobsets()]
    assert seen[0] == seen[2] and seen[0] != seen[1] and seen[0] != fixed
    assert FRESH_SEED_BASE > 900_029  # validation 800000+, tests 9001+ and 900000+ lie below
    from dlsched.papers.deeprm.train import _train_seeds

    assert _train_seeds(config, 2) == {"train_fresh_range": [FRESH_SEED_BASE, FRESH_SEED_BASE + 5]}
    assert _train_seeds(PaperConfig(jobsets=2), 9) == {"train": [100_000, 100_001]}


def test_fresh_jobsets_need_the_paper_preset(tmp_path: Path) -> None:
    from tests.cli.test_bad_args import assert_refused

    assert_refused(["train", "deeprm", "--fresh-jobsets", "--out", str(tmp_path / "o")], "--paper")
