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
``algorithm.py``       the learning algorithm (DL2 actor-critic, REINFORCE, DQN)
``policy.py``          trained network behind the scheduler protocol, load/save (DeepRM, SCED²)
``scheduler.py``       registers the scheduler names (torch imported only when one is built)
``train.py``           a training run end to end (what ``dlsched train NAME`` calls)
``command.py``         the ``dlsched train NAME`` Typer sub-command
``experiments.py``     ``dlsched reproduce NAME``
``policies/``          the shipped checkpoints (package data)
=====================  =======================================================================

To add a paper, copy ``papers/sched2``, rename, edit its manifest and add one line to
`dlsched.plugins.PLUGINS`.
"""
