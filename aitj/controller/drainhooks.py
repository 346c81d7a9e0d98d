"""Runs the checkpoint hooks before a drain that the planner names (``Plan.drain_hooks``;
aitj.core.planner.drain_checkpoint decides which, docs/semantics.md section 26).

The executor only carries out: for each hook, mark the pod ``started`` (its annotation
ANNOTATION_DRAIN_CHECKPOINT, under the pod's uid: a pod replaced since is not touched), exec
the command in the named container through pods/exec, wait for it to exit or the deadline to
pass, and mark the pod ``done``, ``failed`` or ``timedout``. The mark is the only state: the
pod's watch event it causes plans the job again, and the planner, reading it, lets the budget
allow the eviction. Nothing here decides whether to hold a drain.

Why pods/exec and not a file through the downward API: an exec reaches the container at once,
while a downward-API volume is rewritten only when the kubelet syncs the pod (up to a minute;
docs/pods.md), which would eat most of a drain's patience.

A hook takes up to its timeout (600 s at most), so hooks run on threads of their own, never on
the passes' pool; a pod whose hook is under way is not started again (the planner names it until
the ``started`` mark is observed). Each exec has an API client of its own: the client library's
websocket call swaps the client's request function while it runs, which is not safe to share.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import stream
from kubernetes.stream.ws_client import ERROR_CHANNEL

from aitj.controller.executor.wire import Wire
from aitj.controller.logs import log
from aitj.core.observed import ANNOTATION_DRAIN_CHECKPOINT
from aitj.core.planner.drain_checkpoint import HookPhase, exec_result, mark_text
from aitj.core.planner.types import DrainHook

HOOK_WORKERS = 8  # hooks at once; more wait for a thread (their deadline counts from the mark)
GONE = (404, 409)  # the pod is gone, or another pod has its name now: nothing to checkpoint


class DrainHooks:
    """DrainHooks: starts each hook once, on its own thread (module docstring)."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.api_client = api_client
        self.wire = Wire(api_client)
        self.pool = concurrent.futures.ThreadPoolExecutor(HOOK_WORKERS, thread_name_prefix="drainhook")
        self._lock = threading.Lock()
        self._running: set[str] = set()  # uids of the pods whose hook is under way

    def start(self, namespace: str, hooks: Sequence[DrainHook]) -> None:
        """start: run each hook not already under way (called from the event loop: returns at once)."""
        for hook in hooks:
            with self._lock:
                if hook.uid in self._running:
                    continue
                self._running.add(hook.uid)
            self.pool.submit(self._run, namespace, hook)

    def close(self) -> None:
        """close: start no more hooks; those under way end at their deadline."""
        self.pool.shutdown(wait=False, cancel_futures=True)

    def _run(self, namespace: str, hook: DrainHook) -> None:
        bound = log.bind(namespace=namespace, pod=hook.name)
        try:
            if not self._mark(namespace, hook, HookPhase.STARTED):
                return
            bound.info("checkpoint before drain: running the hook", command=list(hook.command))
            phase, detail = self._exec(namespace, hook)
            bound.info("checkpoint before drain: hook finished", result=phase.value, detail=detail)
            self._mark(namespace, hook, phase, detail)
        except Exception as e:  # a hook must never take a thread down with it
            bound.warning("checkpoint before drain: hook failed", error=str(e))
            self._mark(namespace, hook, HookPhase.FAILED, str(e))
        finally:
            with self._lock:
                self._running.discard(hook.uid)

    def _mark(self, namespace: str, hook: DrainHook, phase: HookPhase, detail: str = "") -> bool:
        """_mark: write the pod's mark (uid in the patch: a pod replaced since is not touched);
        False when the pod is gone or another; another refusal is raised."""
        text = mark_text(phase, datetime.now(UTC), detail)
        patch = {"metadata": {"uid": hook.uid, "annotations": {ANNOTATION_DRAIN_CHECKPOINT: text}}}
        try:
            self.wire.patch_pod(hook.name, namespace, patch)
        except ApiException as e:
            if e.status in GONE:
                return False
            raise
        return True

    def _exec(self, namespace: str, hook: DrainHook) -> tuple[HookPhase, str]:
        """_exec: run the command and wait for it, at most its timeout: what came of it."""
        core = client.CoreV1Api(client.ApiClient(self.api_client.configuration))
        session: Any = stream(
            core.connect_get_namespaced_pod_exec,
            hook.name,
            namespace,
            command=list(hook.command),
            stdin=False,
            stdout=True,
            stderr=True,
            tty=False,
            _preload_content=False,
            **({"container": hook.container} if hook.container else {}),
        )
        try:
            session.run_forever(timeout=hook.timeout_seconds)
            if session.is_open():
                return HookPhase.TIMEDOUT, f"still running after {hook.timeout_seconds}s"
            # Read here, not through ``returncode``, which cannot read a status without an exit
            # code (the runtime would not run the command): drain_checkpoint.exec_result says.
            answer = session.read_channel(ERROR_CHANNEL)
        finally:
            session.close()
        try:
            status = yaml.safe_load(answer) if answer else None
        except yaml.YAMLError:
            status = {"message": answer[:200]}
        return exec_result(status)
