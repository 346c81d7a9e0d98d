"""What real nodes do to the machine, and the teardown that undoes all of it.

Pod and Service traffic must never leave the machine. The guards, in the order ``guard`` sets
them (docs/real-nodes.md):
- pods have no default route (``configs.cni_network``), and the Service range is routed to the
  first bridge, so a connection to a ClusterIP never follows the machine's default route,
  even before kube-proxy has written its rules;
- nothing is forwarded from or to the uplink (the interfaces of the machine's default routes),
  and no packet of a connection from a pod, or first addressed to the pod or Service ranges,
  leaves through it (``iptables``, in the mangle table, which kube-proxy leaves alone; every
  rule tagged with ``GUARD_COMMENT``);
- only then is forwarding turned on, which pod-to-Service traffic needs (the CNI bridge plugin
  turns it on by itself anyway: forwarding is not the guard, the rules are).

``teardown`` stops what is left of the pods (the containers outlive containerd and the
kubelet), unmounts what the nodes mounted, deletes the bridges and the rules of kube-proxy and
the kubelet, restores the two sysctls it found, and lifts the guards last.

Only one cluster at a time may have real nodes on a machine (``claim``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

from aitj.devcluster.config import ClusterError
from aitj.devcluster.realnodes.layout import POD_RANGE, SERVICE_RANGE, RealNode

GUARD_COMMENT = "aitj-real-nodes"
SYSCTLS = ("net/ipv4/ip_forward", "net/bridge/bridge-nf-call-iptables")
# Chains the kubelet makes (IPv4 and IPv6) and leaves behind when it stops.
KUBELET_CHAINS = {
    "filter": ("KUBE-FIREWALL", "KUBE-KUBELET-CANARY"),
    "nat": ("KUBE-KUBELET-CANARY",),
    "mangle": ("KUBE-KUBELET-CANARY", "KUBE-IPTABLES-HINT"),
}
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PARENT = "/aitj"  # every node's cgroup_root is below it


def run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise ClusterError(f"`{' '.join(argv)}` failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc


# ---- one cluster at a time ---------------------------------------------------------------
def claim(run_dir: Path, cluster: str, is_running: bool) -> None:
    """claim marks this machine's real nodes as ``cluster``'s; a ClusterError when another
    cluster holds them and still runs (``is_running`` says whether the holder named in the
    claim runs: the caller knows how to ask)."""
    owner = run_dir / "owner"
    if owner.exists() and owner.read_text().strip() not in ("", cluster) and is_running:
        raise ClusterError(
            f"cluster {owner.read_text().strip()!r} runs real nodes on this machine already; only one "
            "cluster at a time can (they share the machine's network). Stop it first: "
            f"aitj cluster down --name {owner.read_text().strip()}"
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    owner.write_text(cluster)


def claimed_by(run_dir: Path) -> str | None:
    owner = run_dir / "owner"
    return owner.read_text().strip() or None if owner.exists() else None


# ---- network -----------------------------------------------------------------------------
def uplinks() -> list[str]:
    """uplinks: the interfaces the machine's default routes leave through."""
    out = run("ip", "-j", "route", "show", "default").stdout
    routes = json.loads(out or "[]")
    return sorted({r["dev"] for r in routes if "dev" in r})


def _guard_rules(uplink: str) -> list[tuple[str, ...]]:
    """_guard_rules: (table, chain, match...) of each DROP rule for ``uplink``. The mangle
    table's are the guard proper: kube-proxy never touches it, so no rule of its can come
    first and accept, and POSTROUTING sees every packet about to leave, forwarded or the
    machine's own, after any DNAT: a connection first addressed to the Service range, or
    coming from a pod, never leaves through the uplink, whatever endpoint it was sent to.
    The filter table's FORWARD rules are the same guard where people look for it."""
    return [
        ("mangle", "FORWARD", "-i", uplink),
        ("mangle", "FORWARD", "-o", uplink),
        ("mangle", "POSTROUTING", "-o", uplink, "-d", POD_RANGE),
        ("mangle", "POSTROUTING", "-o", uplink, "-m", "conntrack", "--ctorigdst", SERVICE_RANGE),
        ("mangle", "POSTROUTING", "-o", uplink, "-m", "conntrack", "--ctorigsrc", POD_RANGE),
        ("filter", "FORWARD", "-i", uplink),
        ("filter", "FORWARD", "-o", uplink),
    ]


def _tagged(rule: tuple[str, ...]) -> tuple[str, ...]:
    return (*rule[2:], "-m", "comment", "--comment", GUARD_COMMENT, "-j", "DROP")


def guard(run_dir: Path, nodes: Iterable[RealNode]) -> None:
    """guard makes the bridges and sets every guard (module docstring), then turns forwarding
    and bridge netfilter on; the sysctls' values before are kept in ``run_dir`` for teardown."""
    nodes = list(nodes)
    saved = run_dir / "sysctls.json"
    if not saved.exists():
        saved.write_text(json.dumps({k: _sysctl(k) for k in SYSCTLS}))
    for up in uplinks():
        for rule in _guard_rules(up):
            table, chain = rule[:2]
            if run("iptables", "-t", table, "-C", chain, *_tagged(rule), check=False).returncode != 0:
                run("iptables", "-t", table, "-I", chain, "1", *_tagged(rule))
    for node in nodes:
        if run("ip", "link", "show", node.bridge, check=False).returncode != 0:
            run("ip", "link", "add", node.bridge, "type", "bridge")
        # An address set by hand stays; one left unset follows the bridge's ports (bridge_mac).
        run("ip", "link", "set", node.bridge, "address", node.bridge_mac)
        run("ip", "addr", "replace", f"{node.ip}/24", "dev", node.bridge)
        run("ip", "link", "set", node.bridge, "up")
    run("ip", "route", "replace", SERVICE_RANGE, "dev", nodes[0].bridge)
    run("modprobe", "br_netfilter", check=False)  # built in on some kernels: the sysctl says
    _set_sysctl("net/ipv4/ip_forward", "1")
    _set_sysctl("net/bridge/bridge-nf-call-iptables", "1")


def _sysctl(key: str) -> str | None:
    try:
        return (Path("/proc/sys") / key).read_text().strip()
    except FileNotFoundError:
        return None


def _set_sysctl(key: str, value: str) -> None:
    path = Path("/proc/sys") / key
    if not path.exists():
        raise ClusterError(
            f"/proc/sys/{key} does not exist: real nodes need it (load the br_netfilter module)"
        )
    path.write_text(value)


# ---- teardown ----------------------------------------------------------------------------
def teardown(run_dir: Path, nodes: Iterable[RealNode], kube_proxy: Path | None) -> list[str]:
    """teardown undoes what real nodes did to the machine (module docstring) and returns what
    it found to undo, for the caller's log. It is safe to run again, and on a machine where
    nothing was set up."""
    done: list[str] = []
    nodes = list(nodes)
    killed = _kill_pods(nodes)
    if killed:
        done.append(f"killed {killed} container processes")
    unmounted = _unmount_under([*(n.dir for n in nodes), *(n.containerd_state for n in nodes), run_dir])
    if unmounted:
        done.append(f"unmounted {unmounted}")
    done += _delete_bridges(nodes)
    run("ip", "route", "delete", SERVICE_RANGE, check=False)
    if kube_proxy is not None and kube_proxy.exists():
        run(str(kube_proxy), "--cleanup", check=False)
    for family, table, chain in kubelet_chains():
        _delete_chain(family, table, chain)
    if _restore_sysctls(run_dir):
        done.append("sysctls restored")
    # The guards go last: until here, something could still have forwarded.
    lifted = _lift_guards()
    if lifted:
        done.append(f"{lifted} guard rules lifted")
    (run_dir / "owner").unlink(missing_ok=True)
    return done


def _delete_bridges(nodes: list[RealNode]) -> list[str]:
    """_delete_bridges removes each node's containerd state and deletes its bridge; returns
    ``bridge <name>`` for each bridge there was."""
    deleted = []
    for node in nodes:
        shutil.rmtree(node.containerd_state, ignore_errors=True)
        if run("ip", "link", "show", node.bridge, check=False).returncode == 0:
            run("ip", "link", "delete", node.bridge, check=False)
            deleted.append(f"bridge {node.bridge}")
    return deleted


def kubelet_chains() -> list[tuple[str, str, str]]:
    """kubelet_chains: (iptables command, table, chain) of every chain the kubelet leaves."""
    return [
        (family, table, chain)
        for family in ("iptables", "ip6tables")
        for table, chains in KUBELET_CHAINS.items()
        for chain in chains
    ]


def _restore_sysctls(run_dir: Path) -> bool:
    """_restore_sysctls sets the sysctls back to what ``guard`` found (those this kernel still
    has); False when ``guard`` saved nothing."""
    saved = run_dir / "sysctls.json"
    if not saved.exists():
        return False
    for key, value in json.loads(saved.read_text()).items():
        if value is not None and _sysctl(key) is not None:
            _set_sysctl(key, value)
    saved.unlink()
    return True


def _kill_pods(nodes: list[RealNode]) -> int:
    """_kill_pods SIGKILLs every process in the nodes' cgroups (the pods' containers) and each
    containerd shim of theirs, then removes the cgroups. A stopped kubelet and containerd
    leave both running: that is what a node whose kubelet died looks like."""
    pids = _shim_pids([str(n.containerd_socket) for n in nodes])
    groups = [d for n in nodes for d in _cgroup_dirs(n.cgroup_root)]
    # The nodes' common parent too, once it is empty (rmdir fails while a child remains).
    groups += [d for d in _cgroup_dirs(CGROUP_PARENT) if d.name == CGROUP_PARENT.strip("/")]
    for group in groups:
        try:
            pids.update(int(p) for p in (group / "cgroup.procs").read_text().split())
        except OSError:
            continue
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _remove_cgroups(groups, deadline=time.monotonic() + 10)
    return len(pids)


def is_shim_of(cmdline: str, sockets: list[str]) -> bool:
    """is_shim_of: whether a process's command line is a containerd shim of one of the
    containerd ``sockets`` (the machine may run other containerds, whose shims stay)."""
    return "containerd-shim" in cmdline and any(s in cmdline for s in sockets)


def _shim_pids(sockets: list[str]) -> set[int]:
    """_shim_pids: the processes that are containerd shims of ``sockets`` (``is_shim_of``)."""
    pids: set[int] = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue  # the process ended meanwhile
        if is_shim_of(cmdline, sockets):
            pids.add(int(proc.name))
    return pids


def deepest_first(groups: list[Path]) -> list[Path]:
    """deepest_first: ``groups`` children before parents, the order rmdir needs."""
    return sorted(groups, key=lambda g: len(g.parts), reverse=True)


def _remove_cgroups(groups: list[Path], deadline: float) -> None:
    """_remove_cgroups removes each cgroup, retrying until ``deadline`` while the killed
    processes still hold one (rmdir fails until the last one is gone)."""
    for group in deepest_first(groups):
        while True:
            try:
                group.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.1)


def make_cgroups(node: RealNode) -> None:
    """make_cgroups creates the node's cgroup subtree in every cgroup v1 hierarchy: the kubelet
    refuses a cgroupRoot that does not exist. A new cpuset cgroup starts with no CPUs and no
    memory nodes, so each level copies its parent's."""
    if not CGROUP_ROOT.is_dir():
        return
    for hierarchy in CGROUP_ROOT.iterdir():
        if hierarchy.is_symlink() or not (hierarchy / "cgroup.procs").exists():
            continue
        path = hierarchy
        for part in node.cgroup_root.strip("/").split("/"):
            parent, path = path, path / part
            path.mkdir(exist_ok=True)
            for key in ("cpuset.cpus", "cpuset.mems"):
                if (path / key).exists() and not (path / key).read_text().strip():
                    (path / key).write_text((parent / key).read_text())


def _cgroup_dirs(root: str) -> list[Path]:
    """_cgroup_dirs: every cgroup folder under ``root`` in each mounted cgroup v1 hierarchy."""
    found: list[Path] = []
    if not CGROUP_ROOT.is_dir():
        return found
    for hierarchy in CGROUP_ROOT.iterdir():
        top = hierarchy / root.lstrip("/")
        if top.is_dir():
            found += [Path(dirpath) for dirpath, _, _ in os.walk(top)]
    return found


def _unmount_under(prefixes: list[Path]) -> int:
    """_unmount_under lazily unmounts every mount point under ``prefixes`` (deepest first)."""
    points: list[str] = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4].replace("\\040", " ")
            if any(point == str(p) or point.startswith(f"{p}/") for p in prefixes):
                points.append(point)
    for point in sorted(set(points), key=len, reverse=True):
        run("umount", "-l", point, check=False)
    return len(set(points))


def _delete_chain(family: str, table: str, chain: str) -> None:
    if run(family, "-t", table, "-S", chain, check=False).returncode != 0:
        return
    listing = run(family, "-t", table, "-S", check=False).stdout
    for rule in listing.splitlines():
        parts = rule.split()
        if parts[:1] == ["-A"] and f"-j {chain}" in rule:
            run(family, "-t", table, "-D", *parts[1:], check=False)
    run(family, "-t", table, "-F", chain, check=False)
    run(family, "-t", table, "-X", chain, check=False)


def _lift_guards() -> int:
    lifted = 0
    for table in ("mangle", "filter"):
        for rule in run("iptables", "-t", table, "-S", check=False).stdout.splitlines():
            if GUARD_COMMENT not in rule or not rule.startswith("-A "):
                continue
            # -S quotes nothing here: the comment has no spaces.
            if run("iptables", "-t", table, "-D", *rule.split()[1:], check=False).returncode == 0:
                lifted += 1
    return lifted
