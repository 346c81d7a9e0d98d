"""aitj: a Kubernetes operator that keeps distributed training jobs alive.

Decide purely, act thinly. The packages are layers (import-linter enforces the order):
- ``cli``        the ``aitj`` command line (top: nothing imports it)
- ``tools``      demo and bench, driving the local control plane
- ``controller`` what talks to the API server: kopf wiring, reconciler, executor, metrics
- ``devcluster`` the local control plane (etcd, kube-*, kwok) built from source
- ``core``       pure: the model, policy, planner, render, explain (bottom: imports only itself)
"""

__version__ = "0.1.0"
# The name aitj's commands give the apiserver (User-Agent: the field manager of what they write);
# the operator's own is aitj.controller.kubeclient.OPERATOR_AGENT.
CLIENT_AGENT = f"aitj/{__version__}"
