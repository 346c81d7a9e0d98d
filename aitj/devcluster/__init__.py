"""The local control plane: a real Kubernetes built from source, with simulated nodes.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl come from one
Kubernetes release, kwok simulates the nodes (no kubelet, no containers); all are built with
``go`` from the Go module proxy through the wrapper modules in ``gomod/`` and cached outside the
repository. ``aitj cluster up`` runs them as background processes bound to 127.0.0.1.

Modules: ``versions`` (pins and paths), ``build`` (go builds), ``pki`` (certificates),
``config`` (settings, ports, config files and command lines), ``apiclient`` (HTTP to the
apiserver, health checks), ``cluster`` (processes: up, down, start, stop, status), ``nodes``
(node profiles), ``faults`` (real faults for tests).
"""
