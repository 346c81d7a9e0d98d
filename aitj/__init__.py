"""aitj: a Kubernetes operator that keeps distributed training jobs alive.

Layout (decide purely, act thinly):
- ``api``       the AITrainingJob model, enums, label and annotation names (pure)
- ``policy``    failure classification and faultTolerantPolicy rule matching (pure)
- ``planner``   ``plan(job, pods, nodes, now) -> Plan`` (pure)
- ``render``    pod, service, secret and configmap manifests (pure)
- ``kube``      the only module that talks to the API server
- ``operator``  kopf handlers, a few lines each, delegating
- ``devcluster`` the local control plane (etcd, kube-*, kwok) built from source
"""

__version__ = "0.1.0"
