"""The example paper: a tiny learned scheduler, trained in seconds, to copy when adding a paper.

A policy orders the waiting jobs by a learned linear score of what DeepRM's scheduler sees (a
job's declared duration, its demand, how long it has waited) and starts them in that order
where they fit; cross-entropy search tunes the three weights for average slowdown on
``deeprm`` jobsets through the shared training run (`dlsched.rl.training`).

Files: `policy` (the features, the scheduler, its checkpoints), `scheduler` (registers
``example``), `config` (the hyper-parameters), `train` (the learning step), `command` (``dlsched
train example``), `card_check` (limits on its cards), `test_example` (its tests, collected by
pytest from here), ``policies/example`` (the shipped checkpoint and its card). This file is the
plugin manifest (no imports beyond `dlsched.plugins`); the one line
``"dlsched.papers.example:PLUGIN"`` in `dlsched.plugins.PLUGINS` adds it.
"""

from dlsched.plugins import CardCheck, Plugin, TrainCommand

PLUGIN = Plugin(
    name="example",
    scheduler_modules=("dlsched.papers.example.scheduler",),
    train_commands=(TrainCommand("example", "dlsched.papers.example.command:train_example"),),
    card_checks=(CardCheck("example", "dlsched.papers.example.card_check:check_card"),),
)
