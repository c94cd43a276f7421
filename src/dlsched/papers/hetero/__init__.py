"""A learned scheduler that uses GPU heterogeneity (issue 33 item 5; not a paper: dlsched's own).

Each scheduling round (the workload's interval, 360 s on ``gavel``) the policy scores every pair
of an active job and a GPU type the job can run on with a learned linear function of what a real
scheduler knows: the job's remaining work (steps, as Gavel's own FTF and makespan policies read
it), its *estimated* speed on each type (``view.type_speeds``: the profiled throughput matrix,
never the true speeds), where it runs now and how long it has waited. Pairs are taken in
decreasing score, each job once, while its type has GPUs left: the action chooses the jobs and
their GPU types. Cross-entropy search tunes the weights for average JCT on ``gavel`` jobs
through the shared training run (`dlsched.rl.training`), as the example paper does.
"""

from dlsched.plugins import CardCheck, Plugin, TrainCommand

PLUGIN = Plugin(
    name="hetero",
    scheduler_modules=("dlsched.papers.hetero.scheduler",),
    train_commands=(TrainCommand("hetero", "dlsched.papers.hetero.command:train_hetero"),),
    card_checks=(CardCheck("hetero", "dlsched.papers.hetero.card_check:check_card"),),
)
