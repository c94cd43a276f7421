"""dlsched on Kubernetes: a controller that lets any dlsched scheduler size DLJobs.

`objects` reads DLJob and Node objects; `view` builds the simulator's `ClusterView` from them;
`actuator` enacts the shared executor's changes as DLJob patches (and, with ``--bind``, pods via
`pods`); `controller` is the list/watch reconcile loop with a `lease`; `metrics` exports
Prometheus metrics. The ``kubernetes`` and ``prometheus-client`` packages come with the ``k8s``
extra.
"""
