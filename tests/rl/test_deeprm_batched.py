"""The batched DeepRM environment gives, per seed, exactly the scalar ``DeepRM-v0`` trajectory
(NumPy and torch back-ends; CUDA when present), and the paper trainer runs on it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from dlsched.papers.deeprm.batched_env import BatchedDeepRMEnv, resolve_device
from dlsched.papers.deeprm.env import DeepRMEnv

SEEDS = [3, 11, 12, 2026, 77]


@pytest.fixture(autouse=True)
def _one_torch_thread() -> Iterator[None]:
    """One torch thread, as `dlsched train` runs (more threads crawl on a shared 2-core box)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _np(x: object) -> np.ndarray:
    return x.cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def _compare(device: str, backend: str | None, load: float, reward: str, masked: bool) -> int:
    """Step scalar and batched episodes with the same actions; return the steps compared."""
    kwargs = dict(horizon_steps=30, mask_invalid=masked, max_steps=200)
    scalars = [DeepRMEnv(load, reward, **kwargs) for _ in SEEDS]  # type: ignore[arg-type]
    batched = BatchedDeepRMEnv(
        len(SEEDS),
        load,
        reward,
        device=device,
        backend=backend,
        **kwargs,  # type: ignore[arg-type]
    )
    obs, info = batched.reset(seed=SEEDS)
    firsts = [env.reset(seed=s) for env, s in zip(scalars, SEEDS, strict=True)]
    for i, (o, inf) in enumerate(firsts):
        assert np.array_equal(_np(obs)[i], o)
        assert np.array_equal(_np(info["action_mask"])[i], inf["action_mask"])
    rng = np.random.default_rng(0)
    done = np.zeros(len(SEEDS), bool)
    steps = 0
    while not done.all():
        mask = _np(info["action_mask"])
        # mostly valid slots, sometimes anything (invalid choices let time move on)
        actions = np.array(
            [
                rng.choice(np.flatnonzero(m)) if rng.random() < 0.8 else rng.integers(len(m))
                for m in mask
            ]
        )
        obs, reward_b, term_b, trunc_b, info = batched.step(actions)
        for i, env in enumerate(scalars):
            if done[i]:
                assert _np(reward_b)[i] == 0.0
                continue
            o, r, term, trunc, inf = env.step(int(actions[i]))
            assert np.array_equal(_np(obs)[i], o), (i, steps)
            assert _np(reward_b)[i] == r, (i, steps)
            assert bool(_np(term_b)[i]) == term and bool(_np(trunc_b)[i]) == trunc
            assert np.array_equal(_np(info["action_mask"])[i], inf["action_mask"])
            done[i] = term or trunc
        steps += 1
    return steps


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize(
    ("load", "reward", "masked"), [(1.3, "slowdown", False), (1.9, "jct", True)]
)
def test_batched_episode_is_the_scalar_episode(
    backend: str, load: float, reward: str, masked: bool
) -> None:
    assert _compare("cpu", backend, load, reward, masked) > 50


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_batched_episode_on_cuda_is_the_scalar_episode() -> None:
    assert _compare("cuda", None, 1.3, "slowdown", False) > 50
    assert _compare("cuda", None, 1.9, "jct", True) > 50


def test_device_names() -> None:
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") in ("cpu", "cuda")
    with pytest.raises(ValueError, match="--device"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            resolve_device("cuda")


# -- the paper trainer on the batched environment ------------------------------------------


@pytest.mark.parametrize("baseline", ["step", "decision"])
def test_paper_trainer_improves_mean_reward(baseline: str) -> None:
    from dlsched.papers.deeprm.paper import PaperConfig, PaperReinforce

    config = PaperConfig(
        loads=(1.0,),
        jobsets=2,
        episodes=8,
        horizon_steps=10,
        lr=0.01,
        mask_invalid=True,
        max_steps=100,
        baseline=baseline,  # type: ignore[arg-type]
    )
    trainer = PaperReinforce(config)
    first = [trainer.step() for _ in range(3)]
    for _ in range(6):
        trainer.step()
    last = [trainer.step() for _ in range(3)]
    assert np.mean([s.mean_reward for s in last]) > np.mean([s.mean_reward for s in first]) + 2.0
    stats = first[-1]  # before the masked policy may collapse (entropy 0)
    assert 0.0 < stats.entropy <= np.log(config.shape.num_actions) + 1e-6
    assert stats.grad_norm > 0 and stats.adv_std > 0 and 0 <= stats.void_share <= 1


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_paper_trainer_on_cuda() -> None:
    from dlsched.papers.deeprm.paper import PaperConfig, PaperReinforce

    config = PaperConfig(loads=(1.3,), jobsets=4, episodes=4, horizon_steps=20, device="cuda")
    stats = PaperReinforce(config).step()
    assert stats.samples > 0 and np.isfinite(stats.grad_norm)


@pytest.mark.slow
def test_train_paper_cli_writes_policy_card_and_diagnostics(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from dlsched.cli import app

    out = tmp_path / "run"
    args = ["train", "deeprm", "--paper", "--loads", "1.1", "--iterations", "2", "--jobsets", "2"]
    args += ["--episodes", "2", "--validation-jobsets", "2", "--validate-every", "1"]
    args += ["--workers", "1"]
    result = CliRunner().invoke(app, [*args, "--device", "cpu", "--out", str(out)])
    assert result.exit_code == 0, result.output
    card = json.loads((out / "card.json").read_text())
    assert "DeepRM's own method" in card["notes"] and "Deviations" in card["notes"]
    assert card["hyperparams"]["mask_invalid"] is False
    header = (out / "train_log.csv").read_text().splitlines()[0].split(",")
    assert {"entropy", "grad_norm", "adv_std", "val_score"} <= set(header)


@pytest.mark.parametrize(
    ("extra", "option"),
    [
        (["--ranked"], "--ranked"),
        (["--device", "tpu"], "--device"),
        (["--baseline", "x"], "--baseline"),
    ],
)
def test_train_paper_refuses_options_outside_the_method(
    extra: list[str], option: str, tmp_path: Path
) -> None:
    from tests.cli.test_bad_args import assert_refused

    assert_refused(["train", "deeprm", "--paper", *extra, "--out", str(tmp_path / "o")], option)
    assert not (tmp_path / "o").exists()


def test_reproduce_labels_both_deeprm_rows_and_the_paper_number_goes_beside_paper_only() -> None:
    from dlsched.papers.deeprm import experiments

    assert "deeprm:paper" in experiments.SCHEDULERS and "deeprm" in experiments.SCHEDULERS
    assert "DeepRM's method" in experiments.label("deeprm:paper")
    assert "imitation" in experiments.label("deeprm")
    lines = experiments.fig7_lines(
        {"deeprm_withholding_share": 0.2, "deeprm:paper_withholding_share": 0.3}
    )
    assert "paper:" not in lines[0] and "paper: 0.234" in lines[1]


def test_paper_trainer_same_iterations_on_numpy_and_torch_environments() -> None:
    from dlsched.papers.deeprm.paper import PaperConfig, PaperReinforce

    rows = []
    for backend in ("numpy", "torch"):
        config = PaperConfig(
            loads=(1.3,),
            jobsets=2,
            episodes=3,
            horizon_steps=15,
            backend=backend,  # type: ignore[arg-type]
        )
        trainer = PaperReinforce(config)
        rows.append([trainer.step() for _ in range(2)])
    for a, b in zip(*rows, strict=True):
        assert (a.samples, a.mean_reward, a.void_share) == (b.samples, b.mean_reward, b.void_share)
        assert a.grad_norm == pytest.approx(b.grad_norm, rel=1e-5)


def test_paper_trainer_in_two_processes_is_the_one_process_run_with_the_same_parts() -> None:
    from dlsched.papers.deeprm.paper import PaperConfig, PaperReinforce

    runs = []
    for workers, chunk in ((1, 2), (2, 0)):  # two parts of two jobsets either way
        config = PaperConfig(
            loads=(1.3,), jobsets=4, episodes=3, horizon_steps=15, workers=workers, chunk=chunk
        )
        with PaperReinforce(config) as trainer:
            rows = [trainer.step() for _ in range(2)]
            runs.append((rows, [p.detach().clone() for p in trainer.net.parameters()]))
    (rows_a, params_a), (rows_b, params_b) = runs
    assert [r.samples for r in rows_a] == [r.samples for r in rows_b]
    assert all(torch.equal(a, b) for a, b in zip(params_a, params_b, strict=True))
    assert rows_b[-1].cpu_s > 0


def test_paper_trainer_starts_from_a_policy_with_a_warm_optimiser(tmp_path: Path) -> None:
    from dlsched.papers.deeprm.paper import PaperConfig, PaperReinforce
    from dlsched.papers.deeprm.train import DeepRMLearner
    from dlsched.rl.checkpoint import PolicyCard, save_checkpoint
    from dlsched.rl.training import Budget

    config = PaperConfig(loads=(1.3,), jobsets=2, episodes=3, horizon_steps=15)
    source = PaperReinforce(config).net
    card = PolicyCard(algorithm="deeprm", workload="deeprm", steps={"iterations": 7})
    save_checkpoint(tmp_path / "p", source.state_dict(), card)
    started = PaperConfig(loads=(1.3,), jobsets=2, episodes=3, horizon_steps=15, seed=5)
    started.init_from = str(tmp_path / "p")
    learner = DeepRMLearner(started, 1, Budget(None))
    trainer = learner.trainer
    pairs = zip(source.parameters(), trainer.net.parameters(), strict=True)
    assert all(torch.equal(a, b) for a, b in pairs)
    stats = trainer.step()
    assert stats.iteration == 8
    # accumulator = g²: each weight with a gradient moves lr·sign(g) (at zero: ≈ 3.16 lr)
    moved = sum(int((p.grad != 0).sum()) for p in trainer.net.parameters())
    assert stats.update_norm == pytest.approx(config.lr * moved**0.5, rel=1e-3)


def test_tetris_star_on_the_slots_is_sjf_at_knob_zero_and_packs_at_knob_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dlsched.papers.deeprm import teachers
    from dlsched.papers.deeprm.config import make_jobsets
    from dlsched.papers.deeprm.state import DeepRMBatch

    batch = DeepRMBatch(make_jobsets([9001, 9002], 1.5, 20), max_steps=300)
    differs = 0
    while batch.active.any():
        rows = np.flatnonzero(batch.active)
        mask = batch.action_masks()[rows]
        sjf = teachers.sjf_actions(batch, rows, mask)
        monkeypatch.setattr(teachers, "TETRIS_KNOB", 0.0)
        assert teachers.tetris_star_actions(batch, rows, mask).tolist() == sjf.tolist()
        monkeypatch.setattr(teachers, "TETRIS_KNOB", 1.0)
        packer = teachers.tetris_star_actions(batch, rows, mask)
        assert mask[np.arange(rows.size), packer].all()  # a fitting job, or ∅ when none fits
        assert ((packer == 0) == (sjf == 0)).all()  # work-conserving like SJF
        differs += int((packer != sjf).sum())
        actions = np.zeros(len(batch.rows), np.int64)
        actions[rows] = sjf
        batch.step(actions)
    assert differs > 0
