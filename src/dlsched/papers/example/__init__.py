"""The example paper: the template to copy when adding a paper (a learned scheduler trained in
seconds, its card check and its test).

A policy starts the waiting jobs in increasing order of a learned linear score of what DeepRM's
scheduler sees; cross-entropy search tunes its three weights for average slowdown on ``deeprm``
jobsets through the shared training run (`dlsched.rl.training`).

To add a paper, copy this folder to ``papers/NAME`` and replace, file by file: ``config.py``
(the hyper-parameters: the ``dlsched train NAME`` options), ``policy.py`` (the scheduler and its
checkpoint), ``card_check.py`` (limits on its cards), ``scheduler.py`` (registers the name),
``train.py`` (the learning step), ``command.py`` (``dlsched train NAME``), ``test_example.py``
(its tests, collected from here: ``test_NAME.py``), ``policies/`` (the shipped checkpoint:
``dlsched train NAME --out …/policies/NAME``). This file is the manifest (it imports only
`dlsched.plugins`); then add the one line ``"dlsched.papers.NAME:PLUGIN"`` to
`dlsched.plugins.PLUGINS`. Nothing else changes.
"""

from dlsched.plugins import CardCheck, Plugin, TrainCommand

PLUGIN = Plugin(
    name="example",
    scheduler_modules=("dlsched.papers.example.scheduler",),
    train_commands=(TrainCommand("example", "dlsched.papers.example.command:train_example"),),
    card_checks=(CardCheck("example", "dlsched.papers.example.card_check:check_card"),),
)
