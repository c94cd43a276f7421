"""DL2 (Peng et al., arXiv 1909.06040): a policy network deciding workers and parameter servers
per job each 20-minute slot; supervised warm-up from a heuristic, then RL (the paper's
actor-critic, or evolution strategies).

Files: `state` (the slot state and DL2's incremental actions, §4.1; `free`: the free
resources it hands out task by task), `env` (`Dl2Env`),
`algorithm` (supervised warm-up and actor-critic, the policy networks, save/load), `es`
(evolution strategies on the average JCT of whole training traces: the RL phase that improves
on the supervised start, ``train dl2 --rl-method es``), `scheduler`
(registers ``dl2`` and ``offline-rl``), `train` (``dlsched train dl2``'s run; `command` is the
sub-command), `federated` (§6.3 Fig. 18), `online` (learning from a running cluster),
`offline_rl` (the OfflineRL baseline's fitted-speed simulator), `experiments` /
`experiments_training` / `report` (``dlsched reproduce dl2``), ``policies/dl2`` and
``policies/offline_rl`` (shipped checkpoints), `card_check` (its cards' limits). This file is
the plugin manifest (no imports beyond `dlsched.plugins`).
"""

from dlsched.plugins import (
    CardCheck,
    EnvEntry,
    ExperimentEntry,
    OnlineLearnerEntry,
    Plugin,
    TrainCommand,
    WorkloadEntry,
)

PLUGIN = Plugin(
    name="dl2",
    scheduler_modules=("dlsched.papers.dl2.scheduler",),
    workloads=(
        WorkloadEntry(
            "dl2",
            "dlsched.workloads.dl2:make_dl2",
            False,
            "DL2 §6: 8 PS job types with measured speeds, 1,200 s slots, 13-server testbed",
        ),
    ),
    experiments=(
        ExperimentEntry(
            "dl2",
            "dlsched.papers.dl2.experiments:run",
            "DL2 Figs. 9, 10, 13-17 and Table 2: shipped policy vs baselines, training, ablations",
        ),
    ),
    train_commands=(TrainCommand("dl2", "dlsched.papers.dl2.command:train_dl2_command"),),
    envs=(
        EnvEntry(
            "dlsched/DL2-v0",
            "dlsched.papers.dl2.env:Dl2Env",
            {"reward": "jct"},
            "DL2, one step per action; default reward: its episode sum is minus the total JCT",
        ),
        EnvEntry(
            "dlsched/DL2Slot-v0",
            "dlsched.papers.dl2.slot_env:Dl2SlotEnv",
            {},
            "DL2, one step per time slot (a MultiDiscrete action); reward: jobs in system ÷ J",
        ),
    ),
    card_checks=(CardCheck("dl2", "dlsched.papers.dl2.card_check:check_card"),),
    online_learners=(OnlineLearnerEntry("dl2", "dlsched.papers.dl2.online:load_dl2_online"),),
)
