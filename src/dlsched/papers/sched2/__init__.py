"""SCED² (locality-aware job selection with deep Q-learning): a shared-weight Q-network picks
one of the first J waiting jobs at a time, trained by DQN with prioritized replay; and SCED²-L,
the shipped policy, a learned rule over the whole queue with a reservation planned over
estimated durations, trained by cross-entropy search.

Files: `state` (state, actions and masks, §III-B/C, Table I), `profiling` (k measured speeds per
arriving job, §III-B), `env` (`Sched2Env`), `algorithm` (the Q-network and DQN, §III-E/F),
`teacher` (DSIF demonstrations), `lookahead` (SCED²-L) and `lookahead_train` (its cross-entropy
search), `policy` (checkpoints of both kinds behind the scheduler protocol, load/save/evaluate),
`scheduler` (registers ``sched2``), `train` (``dlsched train sched2``'s runs; `command` is the
sub-command), `experiments` and `fragmentation` (``dlsched reproduce sched2`` and
``sched2-fragmentation``), ``policies/sched2`` (the shipped SCED²-L checkpoint) and
``policies/sched2_dqn`` (the issue-6 Q-network), `card_check` (its cards' limits);
`batched_env` (`BatchedSched2Env`: many episodes as arrays; helpers in `arrays`), `replay`
(vector prioritized replay), `paper` (``train sched2 --paper``, `PaperLearner`; `paper_command`
its display), ``policies/sched2_paper`` (``sched2:paper``) and ``policies/sched2_paper_masked``
(``sched2:paper-masked``, trained with ``--hold-mask local``, a deviation). This file is the
plugin manifest (no imports beyond `dlsched.plugins`).
"""

from dlsched.plugins import (
    CardCheck,
    EnvEntry,
    ExperimentEntry,
    Plugin,
    TrainCommand,
    WorkloadEntry,
)

PLUGIN = Plugin(
    name="sched2",
    scheduler_modules=("dlsched.papers.sched2.scheduler",),
    workloads=(
        WorkloadEntry(
            "sched2",
            "dlsched.workloads.sched2:make_sched2",
            False,
            "SCED² §IV: 15×8-GPU servers, 68 % one-GPU jobs, locality-sensitive models; "
            "default load 1.8, the contended regime SCED² evaluates and the shipped sched2 "
            "policy is trained for",
        ),
    ),
    experiments=(
        ExperimentEntry(
            "sched2-fragmentation",
            "dlsched.papers.sched2.fragmentation:run",
            "SCED² Fig. 4: average server fragmentation over time, SIF/LRF/FIFO with packing",
        ),
        ExperimentEntry(
            "sched2",
            "dlsched.papers.sched2.experiments:run",
            "SCED² Fig. 7-10 and Table III: shipped policy vs SIF/DSIF/SAF/LRF/SPF/FIFO/Tiresias",
        ),
    ),
    train_commands=(TrainCommand("sched2", "dlsched.papers.sched2.command:train_sched2_command"),),
    envs=(
        EnvEntry(
            "dlsched/SCED2-v0",
            "dlsched.papers.sched2.env:Sched2Env",
            {"reward": "jct"},
            "SCED², one of the first J waiting jobs; default reward: minus the total JCT",
        ),
    ),
    card_checks=(CardCheck("sched2", "dlsched.papers.sched2.card_check:check_card"),),
)
