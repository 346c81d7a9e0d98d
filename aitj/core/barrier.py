"""The job barrier's decision: may the launcher start, and if not, what is it waiting for?

Pure. ``aitj barrier`` (the seed's ``job-barrier`` init container, image
``registry.baidubce.com/cce-plugin-dev/jobbarrier:v0.9-1``) holds the launcher until the pods
it will reach are there: every live pod of the barrier's roles (``--barrier_roles``, replica
names) runs, and its ``<pod>.<job>`` name (``naming.pod_host``, what the discovery host list
uses and what ssh connects to) resolves; and the cluster's DNS answers for its own Service
(``--dns_check_svc``). The command lists the pods and asks DNS; this module says which names
to ask about and what is still missing, so each rule is tested by a table.

Pods on their way out (a deletionTimestamp) and finished pods (Succeeded, Failed) are not
waited for: the operator replaces them under new names. How many pods a role should have comes
from the job's ``replicas`` when the barrier may read the job; else one is enough to start.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from aitj.core import naming
from aitj.core.observed import PodView

# A bare Service name (the seed's "kube-dns") is looked up in this namespace.
DNS_SERVICE_NAMESPACE = "kube-system"


@dataclass(frozen=True)
class Verdict:
    """Verdict: ``done`` when the launcher may start; else ``waiting`` says for what, one
    short phrase per missing thing, in a stable order."""

    waiting: tuple[str, ...]

    @property
    def done(self) -> bool:
        return not self.waiting

    def line(self, limit: int = 5) -> str:
        """line: one progress line (at most ``limit`` reasons, then how many more)."""
        if self.done:
            return "every pod of the barrier's roles runs and resolves"
        shown = list(self.waiting[:limit])
        if len(self.waiting) > limit:
            shown.append(f"and {len(self.waiting) - limit} more")
        return "waiting for: " + "; ".join(shown)


def dns_check_name(service: str) -> str:
    """dns_check_name: the name to resolve for ``--dns_check_svc``: ``<svc>.kube-system`` for a
    bare name (kube-dns lives there; the pod's search path completes the rest), else as given."""
    service = service.strip().rstrip(".")
    return service if "." in service else f"{service}.{DNS_SERVICE_NAMESPACE}"


def live_pods(job: str, roles: Collection[str], pods: Sequence[PodView]) -> list[PodView]:
    """live_pods: the job's pods of ``roles`` that are neither finished nor being deleted,
    by role then name."""
    keep = [p for p in pods if p.job == job and p.replica in roles and not p.deleting and not p.terminal]
    return sorted(keep, key=lambda p: (p.replica or "", p.index if p.index is not None else -1, p.name))


def hosts_to_resolve(job: str, roles: Collection[str], pods: Sequence[PodView]) -> list[str]:
    """hosts_to_resolve: the ``<pod>.<job>`` names worth asking DNS about now: those of the live
    pods that run (a pod that does not run yet has no address to resolve to)."""
    return [naming.pod_host(job, p.name) for p in live_pods(job, roles, pods) if p.running]


def decide(
    job: str,
    roles: Sequence[str],
    pods: Sequence[PodView],
    resolved: Collection[str],
    *,
    expected: Mapping[str, int] | None = None,
    dns_check: str | None = None,
) -> Verdict:
    """decide: what the barrier still waits for. ``resolved``: the names that resolved (names
    from ``hosts_to_resolve``, and ``dns_check`` when given); ``expected``: replicas per role,
    if the job could be read."""
    waiting: list[str] = []
    if dns_check is not None and dns_check not in resolved:
        waiting.append(f"DNS: {dns_check} does not resolve")
    live = live_pods(job, roles, pods)
    for role in roles:
        mine = [p for p in live if p.replica == role]
        want = (expected or {}).get(role)
        if want is not None and len(mine) < want:
            waiting.append(f"{role}: {len(mine)} of {want} pods exist")
        elif not mine and want != 0:
            waiting.append(f"{role}: no pods yet")
        for pod in mine:
            host = naming.pod_host(job, pod.name)
            if not pod.running:
                waiting.append(f"{pod.name} is {pod.phase}")
            elif host not in resolved:
                waiting.append(f"{host} does not resolve")
    return Verdict(tuple(waiting))


def expected_replicas(job: Mapping[str, object], roles: Sequence[str]) -> dict[str, int]:
    """expected_replicas: ``spec.replicaSpecs.<role>.replicas`` of a job as the API returns it,
    for the roles that set a whole number (an absent role or value is left out)."""
    spec = job.get("spec")
    specs = spec.get("replicaSpecs") if isinstance(spec, Mapping) else None
    found: dict[str, int] = {}
    for role in roles:
        replica = specs.get(role) if isinstance(specs, Mapping) else None
        count = replica.get("replicas") if isinstance(replica, Mapping) else None
        if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
            found[role] = count
    return found


def parse_roles(value: str) -> list[str]:
    """parse_roles: ``--barrier_roles`` (comma-separated replica names) as a list, in order,
    without blanks or repeats."""
    return list(dict.fromkeys(r.strip() for r in value.split(",") if r.strip()))
