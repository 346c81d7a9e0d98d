"""What a stalled training waits on, taken from the machine while it waits (issue 46): the
bench's faults that have not healed within FORENSICS_SECONDS are rare (1 in 20 or fewer), so
the evidence is taken by the harness the moment one is seen, not by hand afterwards.

For every pod of the job, from the machine (the real nodes' containers are its processes):
each Python process's stacks (``py-spy dump``: where each thread waits), the pod's TCP sockets
from its network namespace (``ss``: peers, queues, timers, the states a lost FIN or a dead
peer leave), then the machine's connection tracking of pod traffic and kube-proxy's drop
counters (a FIN or a reset dropped as INVALID never reaches the survivor). A tool that is
missing is named in the text instead; nothing here fails the bench.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from aitj.devcluster.realnodes.layout import POD_RANGE
from tests.clusters import KubeCluster
from tests.e2e.real.nodes import pod_processes

# How long a fault may go unhealed before the harness takes the evidence: past every recovery
# the watchdog makes on time (its 30 s bound and the re-forming), well before Gloo's 300 s.
# Sooner to see a wait the watchdog ends (AITJ_BENCH_REAL_FORENSICS=8: a SIGKILL's survivor).
FORENSICS_SECONDS = float(os.environ.get("AITJ_BENCH_REAL_FORENSICS", "45"))
TIMEOUT = 20  # a tool that hangs (py-spy on a process being killed) does not hold the bench


def _run(*command: str) -> str:
    tool = shutil.which(command[0]) or str(Path(sys.executable).parent / command[0])
    if not Path(tool).exists():
        return f"({command[0]} not installed)\n"
    try:
        done = subprocess.run(
            [tool, *command[1:]], capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        return f"({' '.join(command)}: no answer in {TIMEOUT} s)\n"
    return done.stdout + done.stderr


def _cmdline(pid: int) -> str:
    try:
        words = (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ""
    return words.replace(b"\0", b" ").decode(errors="replace")


def _pod(pod: Any) -> str:
    """_pod: one pod's processes, Python's stacks and its sockets."""
    name, uid = pod.metadata.name, pod.metadata.uid
    pids = pod_processes(uid)
    lines = [f"## pod {name} ({pod.status.pod_ip}, {pod.spec.node_name}, {pod.status.phase})\n"]
    lines += [f"{pid}: {_cmdline(pid)}\n" for pid in pids]
    for pid in pids:
        if "python" in _cmdline(pid).split(" ", 1)[0]:
            lines.append(f"### py-spy dump --pid {pid}\n")
            lines.append(_run("py-spy", "dump", "--pid", str(pid)))
    if pids:
        lines.append("### ss -tnpoi (the pod's network namespace)\n")
        lines.append(_run("nsenter", "-t", str(pids[0]), "-n", "ss", "-tnpoi"))
    return "".join(lines)


def capture(cluster: KubeCluster, namespace: str, why: str) -> str:
    """capture: the evidence of a stall in ``namespace``, as text."""
    stamp = time.strftime("%H:%M:%S", time.gmtime())
    parts = [f"# {why}, taken at {stamp} UTC\n"]
    for pod in cluster.core.list_namespaced_pod(namespace).items:
        parts.append(_pod(pod))
    parts.append(f"## conntrack -L -p tcp, the pods' flows ({POD_RANGE}) but those closed\n")
    pods = POD_RANGE.split(".0.0/", 1)[0] + "."
    flows = _run("conntrack", "-L", "-p", "tcp").splitlines()
    parts += [line + "\n" for line in flows if f"src={pods}" in line and " TIME_WAIT " not in line]
    parts.append("## iptables -L KUBE-FORWARD -v -n (kube-proxy's drops)\n")
    parts.append(_run("iptables", "-L", "KUBE-FORWARD", "-v", "-n"))
    return "".join(parts)
