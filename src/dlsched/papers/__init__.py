"""One package per learned scheduler's paper: `dlsched.papers.dl2`, `dlsched.papers.deeprm`,
`dlsched.papers.sched2`.

A paper is a vertical slice over the layers below it (``core``, ``sim``, ``workloads``,
``schedulers``, ``rl``): its state encoding, Gymnasium environment, training algorithm,
scheduler, ``dlsched train`` sub-command, ``dlsched reproduce`` experiments and shipped policies
live together, so that reading or changing one paper means one folder. They sit under
``papers/`` rather than at the top level so that the top level stays one package per *layer*
(the README's layout table) and the papers are visibly plugins of it.

Each package's ``__init__.py`` is its manifest: a `dlsched.plugins.Plugin` named ``PLUGIN`` that
lists, as strings, what it adds; importing it imports nothing else. `dlsched.plugins.PLUGINS`
lists the manifests. What the papers share stays in the layers: `dlsched.rl` (the
policy-scheduler loop, checkpoints, the step-by-step simulator driver) and `dlsched.experiments`
(seed grids with confidence intervals, plots).

Every paper package has the same files, where the paper has the part:

=====================  =======================================================================
``state.py``           state encoding, actions and masks (shared by environment and scheduler)
``env.py``             the Gymnasium environment
``config.py``          the documented hyper-parameter dataclasses (no torch; the CLI's options)
``algorithm.py``       the learning step (DL2 actor-critic, REINFORCE, DQN)
``policy.py``          trained network behind the scheduler protocol, load/save (DeepRM, SCED²)
``scheduler.py``       registers the scheduler names (torch imported only when one is built)
``train.py``           the paper's `dlsched.rl.training.Learner` and what ``dlsched train NAME``
                       calls (budget, keep-best, log and resume are `dlsched.rl.training`'s)
``command.py``         ``dlsched train NAME``: `dlsched.commands.config_options.train_command`
                       over ``config.py``'s dataclasses
``experiments.py``     ``dlsched reproduce NAME``
``policies/``          the shipped checkpoints (package data)
=====================  =======================================================================

To add a paper, copy ``papers/example`` (about 350 lines: a learned scheduler trained in seconds,
its card check and its test; its ``__init__.py`` says what each file becomes), rename, edit its
manifest and add one line to `dlsched.plugins.PLUGINS`.
"""
