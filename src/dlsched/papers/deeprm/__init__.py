"""DeepRM (Mao et al., HotNets 2016): an image of the cluster and the waiting jobs, a one-layer
policy network, REINFORCE with per-timestep baselines.

Files: `shape` (state sizes, jobsets), `state` (DeepRM's discrete-time cluster, vectorised over
episodes, §3), `net` (the policy
network), `env` (`DeepRMEnv`), `algorithm` (REINFORCE over jobsets, §3.3), `teachers` (SJF and
withholding SJF over the slots), `policy` (the trained
network behind the scheduler protocol, checkpoints), `scheduler` (registers ``deeprm``), `train`
(``dlsched train deeprm``'s run; `command` is the sub-command), `experiments` (``dlsched
reproduce deeprm``), ``policies/ranked`` (the shipped ``deeprm`` policy) and ``policies/load0.7``,
``policies/load1.3`` (the paper-state policies, ``deeprm:LOAD``), `card_check` (its cards'
limits). This
file is the plugin manifest (no imports beyond `dlsched.plugins`).
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
    name="deeprm",
    scheduler_modules=("dlsched.papers.deeprm.scheduler",),
    workloads=(
        WorkloadEntry(
            "deeprm",
            "dlsched.workloads.deeprm:make_deeprm",
            False,
            "DeepRM §4.1: 2-resource packing, Bernoulli arrivals, load 10-190 %; default = "
            "the paper's setting (load 0.7, 50-step jobsets, a decision every step); "
            "-o num_jobs=N: long jobsets, event-driven",
        ),
    ),
    experiments=(
        ExperimentEntry(
            "deeprm",
            "dlsched.papers.deeprm.experiments:run",
            "DeepRM Figs. 4-7: slowdown vs load, objectives at 130 %, learning curve, withholding",
        ),
    ),
    train_commands=(TrainCommand("deeprm", "dlsched.papers.deeprm.command:train_deeprm_command"),),
    envs=(
        EnvEntry(
            "dlsched/DeepRM-v0",
            "dlsched.papers.deeprm.env:DeepRMEnv",
            {"reward": "slowdown"},
            "DeepRM's cluster image; default reward: its episode sum is minus the total slowdown",
        ),
    ),
    card_checks=(CardCheck("deeprm", "dlsched.papers.deeprm.card_check:check_card"),),
)
