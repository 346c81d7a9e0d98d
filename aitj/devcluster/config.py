"""What the local control plane is told: its settings, ports, files and command lines.

Nothing here starts a process (``cluster`` does). ``write_files`` writes a cluster's
kubeconfigs, its scheduler and kwok configuration and the apiserver's audit policy into the
cluster's state folder and returns each component's command line, which ``cluster`` records in
``cluster.json`` and runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from aitj.devcluster import nodes as nodes_mod
from aitj.devcluster import pki
from aitj.devcluster.versions import KUBERNETES, KUBERNETES_COMPONENT, KWOK_COMPONENT, etcd_binary, minor

STAGES_DIR = Path(__file__).parent / "stages"
# Start order; stopped in reverse.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
# Below Linux's ephemeral ports (32768-60999 by default): a port in that range can be taken by
# an outgoing connection of another component before its own server binds it.
EPHEMERAL_PORTS_START = 32768
DEFAULT_BASE_PORT = 16443
SCHEDULER_NAMES = ("default-scheduler", "volcano")
# The scheduler profile that gang-schedules (docs/gang.md): pods naming it, as CCE manifests
# do, are placed all or none when they belong to a gang PodGroup.
GANG_SCHEDULER = "volcano"
# The user the operator runs as when installed from manifests/ (its ServiceAccount): the only
# user the apiserver's audit log records, so the log stays small and says exactly what the
# operator asked for (tests/e2e/test_rbac_audit.py reads it against the ClusterRole).
AUDITED_USER = "system:serviceaccount:aitj-system:aitj-operator"
AUDIT_LOG_MAX_MB = 50
AUDIT_LOG_BACKUPS = 2


class ClusterError(RuntimeError):
    """Something about the local cluster is wrong; the message says what and what to do."""


@dataclass(frozen=True)
class Ports:
    apiserver: int
    etcd: int
    etcd_peer: int
    controller_manager: int
    scheduler: int
    kwok: int
    # The local image registry of real nodes (started only with them).
    registry: int

    @classmethod
    def from_base(cls, base: int) -> Ports:
        return cls(base, base + 1, base + 2, base + 3, base + 4, base + 5, base + 6)

    def by_component(self) -> dict[str, int]:
        return {
            "kube-apiserver": self.apiserver,
            "etcd": self.etcd,
            "etcd (peer)": self.etcd_peer,
            "kube-controller-manager": self.controller_manager,
            "kube-scheduler": self.scheduler,
            "kwok": self.kwok,
            "registry": self.registry,
        }


# A kubelet's default nodeStatusReportFrequency: with node Leases on, it posts its node's status
# only when something in it changed, or after this long.
KUBELET_STATUS_REPORT_SECONDS = 300


@dataclass(frozen=True)
class ClusterConfig:
    nodes: int = 3
    node_profile: str = nodes_mod.DEFAULT_PROFILE
    base_port: int = DEFAULT_BASE_PORT
    # How long kube-controller-manager waits for a silent node before marking it Unknown.
    node_grace_seconds: int = 20
    # kwok renews each node's Lease every quarter of this.
    node_lease_seconds: int = 8
    # How often kwok posts a node's status while nothing in it changes (a kubelet's
    # nodeStatusReportFrequency); None: every half Lease duration (4 s at 8 s), which the
    # end-to-end suite's node faults were written against. Every post is a Node event to every
    # watcher (the operator, the scheduler, kube-controller-manager); a real kubelet posts every
    # 5 minutes (KUBELET_STATUS_REPORT_SECONDS), which `make bench` uses.
    node_status_seconds: int | None = None
    # Native gang scheduling on (NATIVE_GANG, the volcano profile) where the release has it;
    # off, the cluster serves no PodGroup API and every profile places each pod alone.
    gang: bool = True
    # Real nodes beside kwok's (docs/real-nodes.md): a kubelet and containerd each, where
    # containers run. 0 to realnodes.layout.MAX_REAL_NODES.
    real_nodes: int = 0


@dataclass(frozen=True)
class NativeGang:
    """NativeGang: how one Kubernetes release turns on its native gang scheduling (KEP-4671):
    the feature gates every control-plane component gets (the same on each: a gate the
    apiserver has and the scheduler lacks would leave the API served and the pods placed one
    by one) and the API version the apiserver must be told to serve (``--runtime-config``)."""

    feature_gates: str
    api_version: str


# The Workload and PodGroup API (pod.spec.schedulingGroup) and the scheduler's GangScheduling
# plugin: the apiserver serves the API, the scheduler gang-schedules, the controller-manager
# keeps a PodGroup (its deletion-protection finalizer) until its pods have stopped. Alpha in
# 1.36 (scheduling.k8s.io/v1alpha2, gates GenericWorkload and GangScheduling); beta in 1.37
# (v1beta1, still off by default: GenericWorkload alone, the GangScheduling gate is gone and
# the plugin comes with GenericWorkload). 1.35's v1alpha1 Workload has no PodGroup kind: the
# operator does not use it, so a 1.35 cluster runs without gangs (docs/gang.md).
NATIVE_GANG = {
    "1.36": NativeGang("GenericWorkload=true,GangScheduling=true", "scheduling.k8s.io/v1alpha2"),
    "1.37": NativeGang("GenericWorkload=true", "scheduling.k8s.io/v1beta1"),
}


def native_gang(release: str = KUBERNETES) -> NativeGang | None:
    """native_gang: how ``release`` gang-schedules natively (None: not in a way the operator
    uses)."""
    return NATIVE_GANG.get(minor(release))


def gang_on(config: ClusterConfig, release: str = KUBERNETES) -> bool:
    """gang_on: the cluster gang-schedules: asked for, and ``release`` can."""
    return config.gang and native_gang(release) is not None


def write_files(name: str, state: Path, config: ClusterConfig, ports: Ports) -> dict[str, list[str]]:
    """write_files writes the kubeconfigs (one per identity, and the admin's as ``kubeconfig``),
    the scheduler's and kwok's configuration and the audit policy under ``state``, whose ``pki``
    folder holds the certificates; it returns each component's command line."""
    cfg = state / "config"
    for ident in pki.IDENTITIES:
        write_kubeconfig(cfg / f"{ident.file}.kubeconfig", name, state / "pki", ident.file, ports)
    write_kubeconfig(state / "kubeconfig", name, state / "pki", pki.ADMIN.file, ports)
    sched = cfg / "scheduler.yaml"
    sched.write_text(
        yaml.safe_dump(scheduler_config(cfg / "kube-scheduler.kubeconfig", gang=gang_on(config)))
    )
    kwok_cfg = cfg / "kwok.yaml"
    kwok_cfg.write_text(kwok_config(config, pod_log_file(state)))
    pod_log_file(state).write_text(POD_LOG_SEED)
    (cfg / "audit-policy.yaml").write_text(yaml.safe_dump(audit_policy()))
    return commands(state, config, ports, sched, kwok_cfg)


def write_kubeconfig(path: Path, name: str, pki_dir: Path, cert: str, ports: Ports) -> None:
    """write_kubeconfig writes a kubeconfig for the client certificate ``cert``, readable by its
    owner only (it names a private key)."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": f"aitj-{name}",
                "cluster": {
                    "server": f"https://127.0.0.1:{ports.apiserver}",
                    "certificate-authority": str(pki_dir / "ca.crt"),
                },
            }
        ],
        "users": [
            {
                "name": cert,
                "user": {
                    "client-certificate": str(pki_dir / f"{cert}.crt"),
                    "client-key": str(pki_dir / f"{cert}.key"),
                },
            }
        ],
        "contexts": [
            {
                "name": f"aitj-{name}",
                "context": {"cluster": f"aitj-{name}", "user": cert, "namespace": "default"},
            }
        ],
        "current-context": f"aitj-{name}",
    }
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)


def commands(
    state: Path, config: ClusterConfig, ports: Ports, sched: Path, kwok_cfg: Path
) -> dict[str, list[str]]:
    """commands: each component's command line, by component name."""
    p, cfg = state / "pki", state / "config"
    k8s = KUBERNETES_COMPONENT
    return {
        "etcd": [
            str(etcd_binary()),
            "--name=aitj",
            f"--data-dir={state / 'etcd' / 'data'}",
            f"--listen-client-urls=http://127.0.0.1:{ports.etcd}",
            f"--advertise-client-urls=http://127.0.0.1:{ports.etcd}",
            f"--listen-peer-urls=http://127.0.0.1:{ports.etcd_peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{ports.etcd_peer}",
            f"--initial-cluster=aitj=http://127.0.0.1:{ports.etcd_peer}",
            "--listen-metrics-urls=",
            "--quota-backend-bytes=4294967296",
            # A throwaway dev cluster: skip fsync, it is the slowest part of etcd on small disks.
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ],
        "kube-apiserver": [
            str(k8s.binary("kube-apiserver")),
            f"--etcd-servers=http://127.0.0.1:{ports.etcd}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={ports.apiserver}",
            f"--tls-cert-file={p / 'apiserver.crt'}",
            f"--tls-private-key-file={p / 'apiserver.key'}",
            f"--client-ca-file={p / 'ca.crt'}",
            "--authorization-mode=Node,RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={p / 'sa.pub'}",
            f"--service-account-signing-key-file={p / 'sa.key'}",
            "--service-cluster-ip-range=10.96.0.0/16",
            "--allow-privileged=true",
            "--endpoint-reconciler-type=none",
            "--profiling=false",
            # Pod logs: the apiserver reaches kwok's kubelet API at the node's InternalIP
            # (127.0.0.1) and its daemonEndpoints port; kwok's serving certificate is not checked
            # (no --kubelet-certificate-authority), as kwokctl does.
            "--kubelet-preferred-address-types=InternalIP",
            # Auditing (audit_policy): the operator's requests only, rotated so it stays small.
            f"--audit-policy-file={cfg / 'audit-policy.yaml'}",
            f"--audit-log-path={audit_log_file(state)}",
            "--audit-log-format=json",
            f"--audit-log-maxsize={AUDIT_LOG_MAX_MB}",
            f"--audit-log-maxbackup={AUDIT_LOG_BACKUPS}",
            # Logs and exec on real nodes: the kubelets accept clients the cluster's CA signed.
            f"--kubelet-client-certificate={p / 'apiserver-kubelet-client.crt'}",
            f"--kubelet-client-key={p / 'apiserver-kubelet-client.key'}",
            *real_node_admission(config),
            *gang_flags(config, runtime_config=True),
            "--v=1",
        ],
        "kube-controller-manager": [
            str(k8s.binary("kube-controller-manager")),
            f"--kubeconfig={cfg / 'kube-controller-manager.kubeconfig'}",
            f"--authentication-kubeconfig={cfg / 'kube-controller-manager.kubeconfig'}",
            f"--authorization-kubeconfig={cfg / 'kube-controller-manager.kubeconfig'}",
            "--bind-address=127.0.0.1",
            f"--secure-port={ports.controller_manager}",
            "--leader-elect=false",
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={p / 'sa.key'}",
            f"--root-ca-file={p / 'ca.crt'}",
            f"--cluster-signing-cert-file={p / 'ca.crt'}",
            f"--cluster-signing-key-file={p / 'ca.key'}",
            "--allocate-node-cidrs=false",
            "--node-monitor-period=1s",
            f"--node-monitor-grace-period={config.node_grace_seconds}s",
            "--kube-api-qps=200",
            "--kube-api-burst=400",
            "--profiling=false",
            *gang_flags(config),
            "--v=1",
        ],
        "kube-scheduler": [
            str(k8s.binary("kube-scheduler")),
            f"--config={sched}",
            f"--authentication-kubeconfig={cfg / 'kube-scheduler.kubeconfig'}",
            f"--authorization-kubeconfig={cfg / 'kube-scheduler.kubeconfig'}",
            "--bind-address=127.0.0.1",
            f"--secure-port={ports.scheduler}",
            *gang_flags(config),
            "--v=1",
        ],
        "kwok": [
            str(KWOK_COMPONENT.binary("kwok")),
            f"--kubeconfig={cfg / 'kwok.kubeconfig'}",
            f"--config={kwok_cfg}",
            f"--server-address=127.0.0.1:{ports.kwok}",
            # The kubelet API (pod logs) over TLS, as the apiserver calls it; its port goes into
            # each node's daemonEndpoints (stages/node.yaml).
            f"--node-port={ports.kwok}",
            f"--tls-cert-file={p / 'apiserver.crt'}",
            f"--tls-private-key-file={p / 'apiserver.key'}",
        ],
    }


def real_node_admission(config: ClusterConfig) -> list[str]:
    """real_node_admission: with real nodes, the admission plugins that give a namespace's pods
    the node selector and toleration its annotations name (realnodes.layout), so a manifest
    lands on the real nodes unchanged; nothing without them."""
    return (
        ["--enable-admission-plugins=PodNodeSelector,PodTolerationRestriction"] if config.real_nodes else []
    )


def gang_flags(
    config: ClusterConfig, *, release: str = KUBERNETES, runtime_config: bool = False
) -> list[str]:
    """gang_flags: the feature gates of ``release``'s native gang scheduling (and, for the
    apiserver, ``runtime_config``: the API version it must serve), or nothing when
    ``config.gang`` is off or the release has none the operator uses (``native_gang``)."""
    gang = native_gang(release)
    if not config.gang or gang is None:
        return []
    flags = [f"--feature-gates={gang.feature_gates}"]
    if runtime_config:
        flags.append(f"--runtime-config={gang.api_version}=true")
    return flags


def scheduler_config(kubeconfig: Path, *, gang: bool = True) -> dict[str, Any]:
    """scheduler_config: kube-scheduler's KubeSchedulerConfiguration: one profile per name of
    SCHEDULER_NAMES, each with the default plugins, so pods that ask for schedulerName
    "volcano" (as CCE manifests do) are scheduled too. With ``gang``, GANG_SCHEDULER's profile
    gang-schedules (the GangScheduling plugin, default with its feature gate on) and the
    default-scheduler's does not: a pod there is placed alone, whatever group it names."""
    profiles: list[dict[str, Any]] = []
    for name in SCHEDULER_NAMES:
        profile: dict[str, Any] = {"schedulerName": name}
        if gang and name != GANG_SCHEDULER:
            profile["plugins"] = {"multiPoint": {"disabled": [{"name": "GangScheduling"}]}}
        profiles.append(profile)
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": 200, "burst": 400},
        "leaderElection": {"leaderElect": False},
        "profiles": profiles,
    }


def audit_log_file(state: Path) -> Path:
    """audit_log_file: the apiserver's audit log (JSON lines; rotated files sit beside it, named
    ``audit-<time>.log``)."""
    return state / "logs" / "audit.log"


def audit_policy() -> dict[str, Any]:
    """audit_policy: the apiserver's audit Policy: every request of AUDITED_USER at Metadata
    level (who, verb, resource, response code; no bodies), nothing of anyone else. Without
    RequestReceived, a request is one event when it completes; a watch is also one when its
    response starts, so a watch still open is in the log too."""
    return {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "omitStages": ["RequestReceived"],
        "rules": [{"level": "Metadata", "users": [AUDITED_USER]}, {"level": "None"}],
    }


# What ``kubectl logs`` shows of every simulated container: kwok serves one file in the CRI log
# format for all pods (a ClusterLogs rule); tests append lines to it to see them followed.
POD_LOG_SEED = "".join(
    f"2026-01-01T00:00:0{i}.000000000Z stdout F simulated training log line {i}\n" for i in range(1, 4)
)


def pod_log_file(state: Path) -> Path:
    """pod_log_file: the CRI-format log file kwok serves as every pod's container log."""
    return state / "logs" / "pods.cri.log"


def kwok_config(config: ClusterConfig, pod_logs: Path) -> str:
    """kwok_config: kwok's KwokConfiguration, a ClusterLogs rule serving ``pod_logs`` for every
    container, then the node and pod stages (one YAML stream)."""
    options = {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokConfiguration",
        "options": {
            "manageAllNodes": False,
            "manageNodesWithLabelSelector": f"{nodes_mod.MANAGED_LABEL}={nodes_mod.MANAGED_VALUE}",
            "nodeLeaseDurationSeconds": config.node_lease_seconds,
            "cidr": "10.244.0.0/16",
            # The apiserver dials a node's InternalIP for pod logs: kwok's kubelet API listens here.
            "nodeIP": "127.0.0.1",
            "podPlayStageParallelism": 8,
            "nodePlayStageParallelism": 4,
            "nodeLeaseParallelism": 4,
            "podsOnNodeSyncParallelism": 4,
            "enablePodsOnNodeSyncStreamWatch": True,
            # The kubelet API's /containerLogs (ClusterLogs below); off, it answers 405.
            "enableDebuggingHandlers": True,
        },
    }
    # Node status heartbeats, by default at half the Lease's duration, so kube-controller-manager
    # never judges a node by a stale status heartbeat alone (its node lifecycle controller reads
    # the Lease's renewals too, so a longer interval, as a kubelet's, is safe).
    heartbeat_ms = (
        config.node_status_seconds * 1000
        if config.node_status_seconds is not None
        else config.node_lease_seconds * 1000 // 2
    )
    node_stages = (
        (STAGES_DIR / "node.yaml")
        .read_text()
        # kwok's jitter is the upper bound of the delay (below the duration it replaces it).
        .replace("HEARTBEAT_JITTER_MS", str(heartbeat_ms * 5 // 4))
        .replace("HEARTBEAT_MS", str(heartbeat_ms))
    )
    stages = [node_stages, (STAGES_DIR / "pod.yaml").read_text()]
    logs = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "ClusterLogs",
        "metadata": {"name": "aitj-pod-logs"},
        "spec": {"logs": [{"logsFile": str(pod_logs), "follow": True}]},
    }
    return "---\n".join([yaml.safe_dump(options), yaml.safe_dump(logs), *stages])
