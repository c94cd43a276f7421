"""What the experiments share: seed grids summarised with 95 % confidence intervals
(`dlsched.experiments.compare`), Matplotlib figures (`dlsched.experiments.plots`) and the
registry of ``dlsched reproduce NAME`` (`dlsched.experiments.registry`, read from
`dlsched.plugins`). The Kubeflow experiment (`dlsched.experiments.kubeflow`) lives here because
Kubeflow is a baseline, not a learned paper; each paper's experiments are in its package under
`dlsched.papers`.
"""
