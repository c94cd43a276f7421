"""dlsched on Kubernetes: a controller that lets any dlsched scheduler size training jobs.

`objects` reads DLJob and Node objects, `pytorchjob` elastic Kubeflow PyTorchJobs, and `kinds`
says where each job kind lives and whether its CRD serves ``/scale``; `view` builds the
simulator's `ClusterView` from them; `actuator` enacts the shared executor's changes (merge
patches; resizes through ``/scale``) with `rest` (JSON requests through the client's pool),
and with ``--bind`` creates and binds DLJob pods via `pods`; `controller` is the reconcile loop
with a `lease` and the `watches` that wake it; `metrics` exports Prometheus metrics. The
``kubernetes`` and ``prometheus-client`` packages come with the ``k8s`` extra.
"""
