"""What every learned scheduler shares; each paper's own code is in `dlsched.papers`.

* `dlsched.rl.training` — the one training run of every ``dlsched train`` command (budget,
  validate and keep the best, checkpoint + card, CSV and TensorBoard log, resume) around a
  paper's `Learner`; `dlsched.rl.run_options` holds its options without PyTorch.
* `dlsched.rl.policy_scheduler` — `PolicyScheduler`: a trained network deciding a scheduling
  point by a sequence of small actions, behind the ordinary `Scheduler` protocol.
* `dlsched.rl.checkpoint` — checkpoints as plain tensors next to a JSON card, loaded without
  unpickling.
* `dlsched.rl.sim_driver` — `SimDriver`: the simulator one scheduling point at a time, for
  Gymnasium environments.

The old flat modules (``dlsched.rl.dl2``, ``dlsched.rl.deeprm_*``, ``dlsched.rl.sched2_*``,
``dlsched.rl.envs.*``, …) moved to ``dlsched.papers.{dl2,deeprm,sched2}``; see
`dlsched.papers` for the layout of a paper package.
"""
