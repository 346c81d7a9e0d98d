"""The thin layer: sends what a Plan holds to the API server. The only module that writes.

The executor contract. The planner (``aitj.core.planner``) decides and renders; the executor
decides nothing and remembers nothing between passes: it walks ``STEPS`` in order and sends
each step's part of the Plan, skipping the empty ones, and returns what its calls did
(``Sent``) for the reconciler to act on. The planner is written so that a crash or a failed
call anywhere in between is repaired by the next pass, which holds because every step is
idempotent:

1. ``ensure``: create each of the job's objects the cache did not hold (Service, ssh Secret,
   discovery ConfigMap, Volcano PodGroup), rendered. On AlreadyExists the object's metadata
   is read: the job's (the cache was only late) is success; one the job does not control
   stops the pass (ForeignObject), and what was read goes to the cache for the next pass,
   which plans around it (aitj.core.planner.objects). Nothing is ever written to it.
2. ``removes``: delete each object named (the Service, cleanPodPolicy All), under the
   precondition of the uid observed. NotFound, and a uid Conflict (another object under the
   name since), are success.
3. ``creates``: create each rendered pod; AlreadyExists is success (pod names are deterministic,
   so a create repeated after a crash meets the pod it made). Any other failure stops the
   pass: the rest of the plan assumes the pods exist.
4. ``discovery``: replace the discovery ConfigMap with the rendered one, at the
   resourceVersion observed (``Manifest.version``; a Conflict fails the step: the cache was
   behind); NotFound, or no version: create it as ``ensure`` does.
5. ``nudges``: set ANNOTATION_HOSTS on each master pod named (uid in the patch: a pod
   replaced since is not touched; NotFound and Conflict are fine). After the ConfigMap: the
   kubelet's sync that the annotation causes must find the new lists.
6. ``restart_events``: post the Event of each restart this pass records (best effort). Each
   is named after its restart, so it is posted once however many passes send it: before the
   status, so a pass that fails after its creates has said it all the same.
7. ``status``: write the whole status in one JSON patch that first tests the job's
   resourceVersion is the one the pass planned from; a failed test stops the pass (StaleJob),
   any other refusal too (StatusRefused: ``answers.version_test_failed`` tells them apart).
   ``Sent.status_written`` says whether it went through (a job found gone: it did not). The
   write that ends the job is preceded by a dry-run create of an Event: refused because the
   namespace is being deleted, it stops the pass (NamespaceTerminating), and the job, deleted
   with its namespace, is not ended: its pods' loss was no failure.
8. ``spec_replicas`` (a scale-out rolled back): set each replica's ``replicas`` back, in one
   JSON patch of the job that first tests the value it replaces, so that a newer edit wins;
   a failed test (or the job gone) is not an error: the next pass sees the new spec.
9. ``deletes``: delete each pod with the uid precondition and the grace period given;
   NotFound and a uid Conflict count as success.
10. ``release``: remove observed.TRACKING_FINALIZER from each pod named (NotFound is fine).
11. ``budgets``: write each PodDisruptionBudget: a merge patch of its spec and fingerprint
    under the uid observed (not the version: the disruption controller writes its status at
    every pod change), or (NotFound, no uid) a create as ``ensure`` does.
    After the pods' steps: a budget never delays a replacement.
12. ``podgroup``: likewise the Volcano PodGroup. After the pods' steps, like the budgets.
13. ``events``: post them on the job (best effort; one with a ``name`` only once).
14. ``probes``: create again each object held by another under the job's names, as
    ``ensure`` does (a create never changes an object that exists): the pass that finds the
    name free makes the job's own; one still held stops the pass (ForeignObject), after the
    status write and the Events that say so.
15. ``outcome``: count it in metrics and log it.

Not sent: ``Plan.requeue_after`` is the reconciler's; ``Plan.restarts`` are what the status
write records, which the reconciler counts, logs and follows once ``Sent`` says the write went
through (``aitj.controller.recovery_metrics``; docs/semantics.md, "Each restart is recorded
once"); ``Plan.hosts``, ``Plan.held`` and ``Plan.shortfalls`` are for people. Nor does the
executor compare statuses: which scale operations a status write finishes is the reconciler's to
count.

What the calls did is returned in ``Sent``: the pods created (and when, for fault detection),
whether the status was written, why the pass stopped early if it did, and in ``Written``
(``aitj.controller.written``) what the calls returned: the job after its status or spec write,
each pod created, deleted or released, each pod or object found gone. The reconciler stores
``Written`` in the cache (write-through), so the next pass does not plan from a copy older
than the operator's own writes. The executor reads nothing from either.

Stops (``Sent.stopped``, a ``Stop``; each is what the API server said, never a decision): a
refused call, or one that got no answer (connection refused, dropped, timed out): StepFailed;
a pod create refused with a 4xx: PodRefused, a StepFailed carrying what was said (for
``lifecycle.plan_refused``); a native gang PodGroup refused for want of its Workload:
GangRefused, a StepFailed; an object of the job's names held by another: ForeignObject, a
StepFailed (retried with a backoff: the next pass sees it held, and says so); a create refused
because the namespace is being deleted: NamespaceTerminating; a failed status version test:
StaleJob; any other refusal of the status write (a schema rule, an admission policy):
StatusRefused. The reconciler decides what each means: retry with a backoff, fail the job or
let its pods go in the next pass, or plan again soon. Besides ``execute``, ``report`` sends
what ``aitj.core.planner.failed_pass`` says about failed passes: an Event and a merge patch of
``status.passFailure`` alone (best effort). Metrics are counted only after the call they count
succeeded. The calls of a recovery (a pod's create, patch and delete, Events, the job's status
write) go out as JSON built once, through the client's own pool and credentials (``wire``:
the generated client's call path was 30 % of the operator's busy CPU); the rest through the
generated clients with ``_preload_content=False``, since building model objects from responses
nobody reads would cost most of their CPU.

The executor's pass and the test double (tests/unit/builders.py ``Cluster``) both implement
``PlanSink`` (one typed method per step) and are handed the Plan by the same ``walk``.

Modules: ``contract`` (the steps, ``PlanSink``, ``Sent`` and the stops), ``calls`` (one pass's
calls), ``clients`` (the API clients and per-kind call tables), ``answers`` (what an answer
says: the returned object, a stale write, an existing object's metadata), ``events`` (Event
bodies), ``wire`` (the calls of a recovery as prebuilt JSON), ``fanout`` (a pass's pod
creates, several at once in batches of 1, 2, 4, ...), ``kube_executor`` (``execute`` and
``report``).
"""

from aitj.controller.executor.contract import (
    NOT_SENT,
    STEPS,
    CreatedPod,
    Executor,
    ForeignObject,
    GangRefused,
    NamespaceTerminating,
    PlanSink,
    PodRefused,
    Sent,
    StaleJob,
    StatusRefused,
    Step,
    StepFailed,
    Stop,
    Target,
    only_status,
    sends,
    walk,
)
from aitj.controller.executor.kube_executor import KubeExecutor

__all__ = [
    "NOT_SENT",
    "STEPS",
    "CreatedPod",
    "Executor",
    "ForeignObject",
    "GangRefused",
    "KubeExecutor",
    "NamespaceTerminating",
    "PlanSink",
    "PodRefused",
    "Sent",
    "StaleJob",
    "StatusRefused",
    "Step",
    "StepFailed",
    "Stop",
    "Target",
    "only_status",
    "sends",
    "walk",
]
