"""Real nodes of the local cluster: a kubelet and a containerd of their own, where containers run.

Beside kwok's simulated nodes, ``aitj cluster up --real-nodes N`` starts N real nodes on this
machine (docs/real-nodes.md). Each has a kubelet and a containerd 2 with runc, pods on a CNI
bridge of its own; one kube-proxy and one CoreDNS serve them all (the nodes share the machine's
network namespace, where a second kube-proxy would only rewrite the same rules).

- ``layout``: pure: every name, address, port and path of the real nodes, from the cluster's.
- ``configs``: pure: the files the programs read (containerd, CNI, kubelet, kube-proxy, CoreDNS).
- ``host``: what is done to the machine: the bridges, the guards that keep pod traffic on it,
  and the teardown that takes all of it away again.
- ``start``: the order things are started in, and what is created in the API for them.
"""
