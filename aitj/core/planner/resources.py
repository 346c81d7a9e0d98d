"""The job's objects other than pods: which it needs, rendered, given which the cache holds.

Pure. The controller's cache observes the Service, ssh Secret and discovery ConfigMap of each
job by the job label (``aitj.controller.cache``) and the snapshot hands them to ``plan`` as
``owned``; whatever a live job needs and ``owned`` lacks is planned as a create (``ensure``),
so an object deleted by hand comes back on the next pass. A finished job gets nothing new;
with cleanPodPolicy All its Service is removed (the rest goes with the job).

The headless Service exists only for a job with plugin.ssh or plugin.discovery
(``needs_service``): those are what use the pods' DNS names (the launcher reaches its peers by
them, the host list names them). For any other job it would only cost the controller-manager
an EndpointSlice rewrite at every pod start, stop and restart, for names nobody resolves.

``part``, one of each pass of a job that goes on, plans them, and rewrites the Volcano
PodGroup when the job's spec changes it. The PodDisruptionBudgets are
aitj.core.planner.disruption_budgets'.

``owned`` None means "not observed" (``aitj explain``, tests of other parts of the planner):
nothing is planned about these objects then, as if all were in place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from aitj.core import naming, render
from aitj.core.api import CleanPodPolicy, Job, JobStatus, PodGroupStatus, ReplicaType
from aitj.core.observed import PodView
from aitj.core.planner import lifecycle, objects
from aitj.core.planner.part import Context, Part, steps
from aitj.core.planner.types import HostEntry, Manifest, ObjectKind, ObjectRef, Owned, Settings, SshKeys
from aitj.core.render import access, volcano


def service_ref(job: Job) -> ObjectRef:
    """service_ref: the job's headless Service."""
    return ObjectRef(ObjectKind.SERVICE, naming.service_name(job.name))


def secret_ref(job: Job) -> ObjectRef:
    """secret_ref: the job's ssh Secret (plugin.ssh)."""
    return ObjectRef(ObjectKind.SECRET, naming.ssh_secret_name(job.name))


def configmap_ref(job: Job) -> ObjectRef:
    """configmap_ref: the job's discovery ConfigMap (plugin.discovery)."""
    return ObjectRef(ObjectKind.CONFIGMAP, naming.discovery_configmap_name(job.name))


def needs_service(job: Job) -> bool:
    """needs_service: a plugin uses the pods' DNS names (ssh: the launcher reaches its peers by
    them; discovery: the host list names them), which only the headless Service publishes."""
    return job.spec.ssh or job.spec.discovery


def needs_ssh_keys(job: Job, owned: Owned | None, pods: Sequence[PodView]) -> bool:
    """needs_ssh_keys: the job is live, has plugin.ssh, no Secret of its own is observed
    (``owned`` as the cache holds it: missing, or held by another, when its create is tried
    again), and it has no pod of its own yet (``secret_made``): the controller must make a key
    pair and pass it to ``plan``. Asked before planning so keys are made only then (RSA
    generation costs about 100 ms)."""
    mine, _ = objects.split(job, owned)
    if mine is None or not job.spec.ssh or lifecycle.finished(job) or secret_ref(job) in mine:
        return False
    return not secret_made(job, pods)


def secret_made(job: Job, pods: Iterable[PodView]) -> bool:
    """secret_made: the job has a pod of its own (``objects.owned_by``), so its ssh Secret was
    made, and is its own: pods are created only after the ``ensure`` step, and a pass whose
    ``ensure`` met a Secret held by another stops there (aitj.controller.executor,
    ForeignObject), as does every pass while the planner sees it held
    (``objects.held_back``). Secrets are not watched, so after an operator start the cache
    knows none: without this, every ssh job would cost a spare key pair (about 118 ms of CPU
    each, two minutes for 1,000 jobs) before the read after AlreadyExists showed its own."""
    return any(objects.owned_by(job, p) for p in pods)


def part(ctx: Context) -> Part:
    """part: the objects the job lacks (its Volcano PodGroup last), and the PodGroup rewritten
    when its rendered spec changed, which ``status.volcanoPodGroup`` records."""
    hosts, running = (ctx.lists.hosts, ctx.lists.running) if ctx.lists is not None else ((), None)
    podgroup, spec = podgroup_rewrite(ctx.job, ctx.prev, ctx.owned, ctx.settings)
    # The survey holds the job's own pods only (core.plan_and_assessment judged their maker):
    # any of them means its Secret was made (``secret_made``).
    secret = bool(ctx.found.retirees) or any(s.pod is not None for s in ctx.found.slots)
    wanted = ensure(ctx.job, ctx.owned, ctx.keys, hosts, running, secret=secret) + podgroups(
        ctx.job, ctx.owned, ctx.settings
    )
    made, probes = objects.probes(wanted, ctx.foreign)
    return Part(
        steps(ensure=made, podgroup=podgroup, probes=probes),
        edit=lambda status: status.updated(volcano_pod_group=spec),
    )


def ensure(
    job: Job,
    owned: Owned | None,
    keys: SshKeys | None,
    hosts: Sequence[HostEntry],
    running: Mapping[str, Sequence[str]] | None = None,
    *,
    secret: bool = False,
) -> tuple[Manifest, ...]:
    """ensure: the objects a live job needs that ``owned`` lacks, rendered, in the order they
    are created (Service, Secret, ConfigMap, the launcher's ServiceAccount, Role and
    RoleBinding). A missing ConfigMap is made with the current ``hosts`` and ``running`` (each
    replica's pods in Volcano's host files), so one deleted by hand comes back complete.
    ``secret``: the Secret is known made though not observed (``secret_made``), so it is not
    planned. Raises ValueError when the Secret is missing, not made, and ``keys`` is None (the
    caller skipped ``needs_ssh_keys``)."""
    if owned is None:
        return ()
    out: list[Manifest] = []
    if needs_service(job) and service_ref(job) not in owned:
        out.append(Manifest(ObjectKind.SERVICE, service_ref(job).name, render.render_service(job)))
    if job.spec.ssh and secret_ref(job) not in owned and not (secret and keys is None):
        if keys is None:
            raise ValueError(
                f"job {job.namespace}/{job.name}: the ssh Secret is missing and no key pair was given"
            )
        body = render.render_ssh_secret(job, keys.private_pem, keys.public_openssh)
        out.append(Manifest(ObjectKind.SECRET, secret_ref(job).name, body))
    if job.spec.discovery and configmap_ref(job) not in owned:
        out.append(discovery(job, hosts, running))
    if access.needs_access(job):
        # In this order: a RoleBinding may name a Role not there yet, but a pod may not name a
        # ServiceAccount not there yet, and creates come after ensure.
        name = naming.launcher_account_name(job.name)
        for kind, render_it in (
            (ObjectKind.SERVICE_ACCOUNT, access.render_service_account),
            (ObjectKind.ROLE, access.render_role),
            (ObjectKind.ROLE_BINDING, access.render_role_binding),
        ):
            if ObjectRef(kind, name) not in owned:
                out.append(Manifest(kind, name, render_it(job)))
    return tuple(out)


def discovery(
    job: Job,
    hosts: Sequence[HostEntry],
    running: Mapping[str, Sequence[str]] | None = None,
    owned: Owned | None = None,
) -> Manifest:
    """discovery: the discovery ConfigMap listing ``hosts`` in order, each by its stable DNS
    name with its slots (the GPUs of its replica's template), and Volcano's host files of the
    pods ``running`` names per replica; stamped with their fingerprint, and with the
    resourceVersion of the job's ConfigMap in ``owned`` it rewrites."""
    slots = {r.name: render.slots_for(r.template) for r in job.spec.replicas}  # per replica, not per host
    lines = [(naming.pod_host(job.name, h.pod), slots[h.replica]) for h in hosts]
    body = render.render_discovery_configmap(job, lines, running)
    masters = {
        r.name: tuple((running or {}).get(r.name, ()))
        for r in job.spec.replicas
        if r.replica_type is ReplicaType.MASTER
    }
    fingerprint = hosts_digest([h.pod for h in hosts], masters)
    return objects.stamped(Manifest(ObjectKind.CONFIGMAP, configmap_ref(job).name, body), fingerprint, owned)


def hosts_digest(hosts: Sequence[str], masters: Mapping[str, Sequence[str]]) -> str:
    """hosts_digest: the fingerprint of the discovery lists: Horovod's host list and the master
    replicas' files (the workers' files hold the host list's pods again, so they change with
    it). The ConfigMap carries it (``objects.ANNOTATION_WRITTEN``), and so do the master pods
    nudged to show it (aitj.core.planner.hostfiles)."""
    return objects.digest([list(hosts), {k: list(v) for k, v in masters.items()}])


def podgroup_ref(job: Job) -> ObjectRef:
    """podgroup_ref: the job's Volcano PodGroup."""
    return ObjectRef(ObjectKind.VOLCANO_PODGROUP, volcano.podgroup_name(job))


def pod_group(job: Job, settings: Settings) -> str | None:
    """pod_group: the name of the job's Volcano PodGroup when it has one: Volcano's PodGroup
    kind is served (``settings``) and some replica's pods use ``schedulerName: volcano``.
    Otherwise None, and nothing about the job changes."""
    if settings.volcano_podgroups and any(volcano.uses_volcano(r) for r in job.spec.replicas):
        return podgroup_ref(job).name
    return None


def podgroups(job: Job, owned: Owned | None, settings: Settings) -> tuple[Manifest, ...]:
    """podgroups: the job's Volcano PodGroup when it should have one and ``owned`` lacks it
    (made once; it goes with the job, by its owner reference)."""
    m = _podgroup(job, settings)
    if owned is None or m is None or m.ref in owned:
        return ()
    return (m,)


def podgroup_rewrite(
    job: Job, prev: JobStatus, owned: Owned | None, settings: Settings
) -> tuple[Manifest | None, PodGroupStatus | None]:
    """podgroup_rewrite: the PodGroup to rewrite when its rendered spec differs from the one
    ``prev`` recorded and ``owned`` holds it (a missing one is ``podgroups``'s to make), and
    the rendered spec for ``status.volcanoPodGroup`` (None: the job has no PodGroup). What it
    was last written as is kept so that it is rewritten when the job's spec changes it (an
    edit of minReplicas, a template's requests, the queue), as the budgets are."""
    m = _podgroup(job, settings, owned)
    if m is None:
        return None, None
    spec = PodGroupStatus.from_json(m.body["spec"])
    if owned is None or not objects.stale(owned, m.ref, objects.digest(m.body["spec"])):
        return None, spec
    return m, spec


def _podgroup(job: Job, settings: Settings, owned: Owned | None = None) -> Manifest | None:
    """_podgroup: the job's PodGroup rendered and stamped (the resourceVersion of the job's
    PodGroup in ``owned``), None when it has none (``pod_group``)."""
    name = pod_group(job, settings)
    if name is None:
        return None
    priority_class = settings.priority_classes.get(job.spec.priority or "")
    body = volcano.render_podgroup(job, priority_class)
    return objects.stamped(
        Manifest(ObjectKind.VOLCANO_PODGROUP, name, body), objects.digest(body["spec"]), owned
    )


def removes(job: Job, owned: Owned | None) -> tuple[ObjectRef, ...]:
    """removes: for a finished job, its Service under cleanPodPolicy All, unless ``owned``
    shows it gone already (not observed: planned every pass when the job has one, NotFound
    being success)."""
    ref = service_ref(job)
    if job.spec.clean_pod_policy is not CleanPodPolicy.ALL:
        return ()
    if (owned is not None and ref not in owned) or (owned is None and not needs_service(job)):
        return ()
    state = (owned or {}).get(ref)
    return (ObjectRef(ref.kind, ref.name, state.uid if state else ""),)
