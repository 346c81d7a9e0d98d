"""Invalid AITrainingJob manifests: one table, used by the model's unit tests
(tests/unit/test_api.py) and by the apiserver's end-to-end tests (tests/e2e/test_crd.py).

Each case is the seed manifest with one mistake, the field path a refusal must name, and a
fragment of the message that both the model (``aitj.core.api.parse_job``) and the apiserver (the CRD's
OpenAPI schema and CEL rules) say. Paths are written the model's way
(``spec.replicaSpecs.trainer.replicas``); the apiserver writes CEL paths with map keys in
brackets (``spec.replicaSpecs[trainer].replicas``) and ``apiserver_path`` accounts for that.

``MODEL_ONLY`` cases are valid to the apiserver: pod validation it only makes when a pod is
created (docs/api.md, "Checks only the model makes"). ``UPDATE_CASES`` are edits of a live job.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.seeds import seed_job

Doc = dict[str, Any]
Mutation = Callable[[Doc], None]


@dataclass(frozen=True)
class Case:
    id: str  # reads like a sentence: "<what is wrong> is refused"
    mutate: Mutation
    path: str  # the field the refusal names
    fragment: str  # in the model's message and in the apiserver's

    def manifest(self, name: str | None = None) -> Doc:
        """manifest is the seed with this case's mistake; ``name`` renames the job first."""
        doc = seed_job()
        if name is not None:
            doc["metadata"]["name"] = name
        self.mutate(doc)
        return doc


def _walk(doc: Any, path: str) -> tuple[Any, str | int]:
    """_walk returns (parent, key) of a dotted path with list indices: ``a.b[0].c``."""
    parts: list[str | int] = []
    for token in path.split("."):
        name, *indices = re.split(r"\[(\d+)\]", token)
        parts.append(name)
        parts.extend(int(i) for i in indices if i)
    parent = doc
    for part in parts[:-1]:
        parent = parent[part]
    return parent, parts[-1]


def setting(path: str, value: Any) -> Mutation:
    def mutate(doc: Doc) -> None:
        parent, key = _walk(doc, path)
        if isinstance(parent, list) and key == len(parent):
            parent.append(copy.deepcopy(value))  # one past the end appends
        else:
            parent[key] = copy.deepcopy(value)

    return mutate


def deleting(path: str) -> Mutation:
    def mutate(doc: Doc) -> None:
        parent, key = _walk(doc, path)
        del parent[key]

    return mutate


def copying(source: str, target: str) -> Mutation:
    def mutate(doc: Doc) -> None:
        parent, key = _walk(doc, source)
        setting(target, parent[key])(doc)

    return mutate


def each(*mutations: Mutation) -> Mutation:
    def mutate(doc: Doc) -> None:
        for m in mutations:
            m(doc)

    return mutate


T = "spec.replicaSpecs.trainer"
L = "spec.replicaSpecs.launcher"
T_RULE = f"{T}.faultTolerantPolicy[0]"  # exceptionalEvent nodeNotReady,PodForceDeleted / OnNodeFail
L_CODES = f"{L}.faultTolerantPolicy[0]"  # exitCodes 129,101 / ExitCode
CODES_HINT = "exit codes 0-255 as a number or a string of comma-separated codes and ranges"
EVENTS_HINT = "must be a comma-separated list of nodeNotReady, PodForceDeleted, PodEvicted, PodPreempted"


def _long_exit_codes() -> str:
    return ",".join(["1"] * 33)  # 65 characters


CASES: list[Case] = [
    # --- the job ---------------------------------------------------------------------------------
    Case("a missing spec is refused", deleting("spec"), "spec", "Required value"),
    Case(
        "a job completePolicy of Rank0 is refused: Rank0 exists only within a replica",
        setting("spec.completePolicy", "Rank0"),
        "spec.completePolicy",
        'supported values: "All", "Any", "None"',
    ),
    Case(
        "an unknown job failPolicy is refused",
        setting("spec.failPolicy", "Some"),
        "spec.failPolicy",
        'Unsupported value: "Some"',
    ),
    Case(
        "an unknown cleanPodPolicy is refused",
        setting("spec.cleanPodPolicy", "Finished"),
        "spec.cleanPodPolicy",
        'Unsupported value: "Finished"',
    ),
    Case(
        "an unknown frameworkType is refused",
        setting("spec.frameworkType", "caffe"),
        "spec.frameworkType",
        'Unsupported value: "caffe"',
    ),
    Case(
        "an unknown priority is refused",
        setting("spec.priority", "urgent"),
        "spec.priority",
        'Unsupported value: "urgent"',
    ),
    Case(
        "faultTolerant written as a word is refused",
        setting("spec.faultTolerant", "yes"),
        "spec.faultTolerant",
        "must be of type boolean",
    ),
    Case(
        "a timeLimit of zero seconds is refused",
        setting("spec.timeLimit", 0),
        "spec.timeLimit",
        "should be greater than or equal to 1",
    ),
    Case(
        "a misspelt job field is refused as unknown",
        setting("spec.faultTolerance", True),
        "spec.faultTolerance",
        'unknown field "spec.faultTolerance"',
    ),
    Case(
        "a plugin given as a word instead of a list is refused",
        setting("spec.plugin.ssh", "yes"),
        "spec.plugin.ssh",
        "must be of type array",
    ),
    Case(
        "an unknown plugin is refused",
        setting("spec.plugin.tensorboard", [""]),
        "spec.plugin.tensorboard",
        'unknown field "spec.plugin.tensorboard"',
    ),
    Case(
        "a job without replicaSpecs is refused",
        deleting("spec.replicaSpecs"),
        "spec.replicaSpecs",
        "Required value",
    ),
    Case(
        "a job with an empty replicaSpecs is refused",
        setting("spec.replicaSpecs", {}),
        "spec.replicaSpecs",
        "should have at least 1 properties",
    ),
    Case(
        "a replica name that is no DNS label is refused",
        copying(T, "spec.replicaSpecs.Worker_1"),
        "spec.replicaSpecs",
        "replica names must be DNS-1123 labels",
    ),
    Case(
        "two master replica specs are refused",
        each(
            setting(f"{T}.replicaType", "master"),
            setting(f"{T}.replicas", 1),
            setting(f"{T}.maxReplicas", 1),
        ),
        "spec.replicaSpecs",
        "at most one replica spec may have replicaType: master",
    ),
    Case(
        "a job name that starts with a digit is refused: it names a Service",
        setting("metadata.name", "1st-job"),
        "metadata.name",
        "must be a DNS-1035 label",
    ),
    Case(
        "a job name that makes pod names longer than a DNS label is refused",
        setting("metadata.name", "a" * 50),
        "metadata.name",
        "longer than 63 characters",
    ),
    # --- replica counts --------------------------------------------------------------------------
    Case(
        "minReplicas above maxReplicas is refused",
        setting(f"{T}.minReplicas", 6),
        f"{T}.minReplicas",
        "must not be greater than maxReplicas",
    ),
    Case(
        "replicas above maxReplicas is refused",
        setting(f"{T}.replicas", 6),
        f"{T}.replicas",
        "must not be greater than maxReplicas",
    ),
    Case(
        "replicas below minReplicas is refused",
        each(setting(f"{T}.minReplicas", 2), setting(f"{T}.replicas", 1)),
        f"{T}.replicas",
        "must not be less than minReplicas",
    ),
    Case(
        "zero replicas are refused",
        setting(f"{T}.replicas", 0),
        f"{T}.replicas",
        "should be greater than or equal to 1",
    ),
    Case(
        "replicas written as a word are refused",
        setting(f"{T}.replicas", "three"),
        f"{T}.replicas",
        "must be of type integer",
    ),
    Case(
        "replicas beyond the bound are refused",
        each(setting(f"{T}.replicas", 10_001), deleting(f"{T}.maxReplicas")),
        f"{T}.replicas",
        "should be less than or equal to 10000",
    ),
    Case(
        "a master with two replicas is refused",
        each(setting(f"{L}.replicas", 2), deleting(f"{L}.maxReplicas")),
        f"{L}.replicas",
        "runs exactly one pod: replicas must be 1",
    ),
    Case(
        "a master with maxReplicas 2 is refused",
        setting(f"{L}.maxReplicas", 2),
        f"{L}.maxReplicas",
        "runs exactly one pod: maxReplicas must be 1",
    ),
    # --- replica policies ------------------------------------------------------------------------
    Case(
        "an unknown replicaType is refused",
        setting(f"{T}.replicaType", "chief"),
        f"{T}.replicaType",
        'Unsupported value: "chief"',
    ),
    Case(
        "an unknown replica completePolicy is refused",
        setting(f"{T}.completePolicy", "Most"),
        f"{T}.completePolicy",
        'Unsupported value: "Most"',
    ),
    Case(
        "an unknown replica restartPolicy is refused",
        setting(f"{T}.restartPolicy", "Sometimes"),
        f"{T}.restartPolicy",
        'Unsupported value: "Sometimes"',
    ),
    Case(
        "an unknown restartScope is refused",
        setting(f"{T}.restartScope", "Node"),
        f"{T}.restartScope",
        'Unsupported value: "Node"',
    ),
    Case(
        "a negative restartLimit is refused",
        setting(f"{T}.restartLimit", -1),
        f"{T}.restartLimit",
        "should be greater than or equal to 0",
    ),
    Case(
        "a negative restartTimeLimit is refused",
        setting(f"{T}.restartTimeLimit", -5),
        f"{T}.restartTimeLimit",
        "should be greater than or equal to 0",
    ),
    Case(
        "a restartTimeout of zero is refused",
        setting(f"{T}.restartTimeout", 0),
        f"{T}.restartTimeout",
        "should be greater than or equal to 1",
    ),
    Case(
        "a scaleTimeout of zero is refused",
        setting(f"{T}.scaleTimeout", 0),
        f"{T}.scaleTimeout",
        "should be greater than or equal to 1",
    ),
    Case(
        "a misspelt replica field is refused as unknown",
        setting(f"{T}.replica", 3),
        f"{T}.replica",
        f'unknown field "{T}.replica"',
    ),
    # --- faultTolerantPolicy rules ---------------------------------------------------------------
    Case(
        "an exit code above 255 is refused",
        setting(f"{L_CODES}.exitCodes", 300),
        f"{L_CODES}.exitCodes",
        CODES_HINT,
    ),
    Case(
        "a negative exit code is refused",
        setting(f"{L_CODES}.exitCodes", -1),
        f"{L_CODES}.exitCodes",
        CODES_HINT,
    ),
    Case(
        "an exit code above 255 inside a list is refused",
        setting(f"{L_CODES}.exitCodes", "129,256"),
        f"{L_CODES}.exitCodes",
        CODES_HINT,
    ),
    Case(
        "an empty item in an exit code list is refused",
        setting(f"{L_CODES}.exitCodes", "129,,101"),
        f"{L_CODES}.exitCodes",
        CODES_HINT,
    ),
    Case(
        "words in exitCodes are refused",
        setting(f"{L_CODES}.exitCodes", "sigkill"),
        f"{L_CODES}.exitCodes",
        CODES_HINT,
    ),
    Case(
        "a reversed exit code range is refused",
        setting(f"{L_CODES}.exitCodes", "140-130"),
        f"{L_CODES}.exitCodes",
        "low-high",
    ),
    Case(
        "an exitCodes string longer than 64 characters is refused",
        setting(f"{L_CODES}.exitCodes", _long_exit_codes()),
        f"{L_CODES}.exitCodes",
        "Too long: may not be more than 64 bytes",
    ),
    Case(
        "an unknown exceptional event is refused",
        setting(f"{T_RULE}.exceptionalEvent", "nodeDown"),
        f"{T_RULE}.exceptionalEvent",
        EVENTS_HINT,
    ),
    Case(
        "an empty item in an event list is refused",
        setting(f"{T_RULE}.exceptionalEvent", "nodeNotReady,,PodEvicted"),
        f"{T_RULE}.exceptionalEvent",
        EVENTS_HINT,
    ),
    Case(
        "an event name in the wrong case is refused",
        setting(f"{T_RULE}.exceptionalEvent", "NodeNotReady"),
        f"{T_RULE}.exceptionalEvent",
        EVENTS_HINT,
    ),
    Case(
        "a rule with both exitCodes and exceptionalEvent is refused",
        setting(f"{T_RULE}.exitCodes", "137"),
        T_RULE,
        "a rule needs exactly one of exitCodes or exceptionalEvent",
    ),
    Case(
        "a rule with neither exitCodes nor exceptionalEvent is refused",
        deleting(f"{T_RULE}.exceptionalEvent"),
        T_RULE,
        "a rule needs exactly one of exitCodes or exceptionalEvent",
    ),
    Case(
        "an exitCodes rule with restartPolicy OnNodeFail is refused",
        setting(f"{L_CODES}.restartPolicy", "OnNodeFail"),
        f"{L_CODES}.restartPolicy",
        "a rule with exitCodes needs restartPolicy: ExitCode",
    ),
    Case(
        "an exceptionalEvent rule with restartPolicy ExitCode is refused",
        setting(f"{T_RULE}.restartPolicy", "ExitCode"),
        f"{T_RULE}.restartPolicy",
        "a rule with exceptionalEvent needs restartPolicy: OnNodeFail",
    ),
    Case(
        "a rule with restartPolicy Always is refused",
        setting(f"{T_RULE}.restartPolicy", "Always"),
        f"{T_RULE}.restartPolicy",
        'supported values: "ExitCode", "OnNodeFail"',
    ),
    Case(
        "a rule without restartPolicy is refused",
        deleting(f"{T_RULE}.restartPolicy"),
        f"{T_RULE}.restartPolicy",
        "Required value",
    ),
    Case(
        "a rule with an unknown restartScope is refused",
        setting(f"{T_RULE}.restartScope", "Node"),
        f"{T_RULE}.restartScope",
        'Unsupported value: "Node"',
    ),
    Case(
        "a rule with a negative restartLimit is refused",
        setting(f"{L_CODES}.restartLimit", -1),
        f"{L_CODES}.restartLimit",
        "should be greater than or equal to 0",
    ),
    Case(
        "a rule with restartWindowSeconds 0 is refused",
        setting(f"{L_CODES}.restartWindowSeconds", 0),
        f"{L_CODES}.restartWindowSeconds",
        "should be greater than or equal to 1",
    ),
    Case(
        "a rule with restartWindowSeconds and no restartLimit is refused",
        setting(f"{L_CODES}.restartWindowSeconds", 600),
        f"{L_CODES}.restartWindowSeconds",
        "restartWindowSeconds needs restartLimit",
    ),
    Case(
        "a rule allowing more restarts within a window than the ledger keeps is refused",
        each(setting(f"{L_CODES}.restartLimit", 1_001), setting(f"{L_CODES}.restartWindowSeconds", 600)),
        f"{L_CODES}.restartLimit",
        "with restartWindowSeconds, restartLimit must be at most 1000",
    ),
    # issue 28: infrastructure faults kept off a rule's budget
    Case(
        "a rule that exempts infrastructure faults from a restartLimit it does not have is refused",
        setting(f"{T_RULE}.infrastructureFaults", "Exempt"),
        f"{T_RULE}.infrastructureFaults",
        "infrastructureFaults: Exempt needs restartLimit",
    ),
    Case(
        "an unknown infrastructureFaults is refused",
        each(setting(f"{T_RULE}.infrastructureFaults", "Free"), setting(f"{T_RULE}.restartLimit", 3)),
        f"{T_RULE}.infrastructureFaults",
        'Unsupported value: "Free"',
    ),
    Case(
        "a rule backoff without initialSeconds is refused",
        setting(f"{L_CODES}.backoff", {"maxSeconds": 60}),
        f"{L_CODES}.backoff.initialSeconds",
        "Required value",
    ),
    Case(
        "a rule backoff whose maxSeconds is below initialSeconds is refused",
        setting(f"{L_CODES}.backoff", {"initialSeconds": 10, "maxSeconds": 5}),
        f"{L_CODES}.backoff.maxSeconds",
        "must not be less than initialSeconds",
    ),
    Case(
        "a rule with excludeNodeSeconds 0 is refused",
        setting(f"{L_CODES}.excludeNodeSeconds", 0),
        f"{L_CODES}.excludeNodeSeconds",
        "should be greater than or equal to 1",
    ),
    Case(
        "more than 16 rules are refused",
        setting(
            f"{T}.faultTolerantPolicy",
            [{"exceptionalEvent": "nodeNotReady", "restartPolicy": "OnNodeFail"}] * 17,
        ),
        f"{T}.faultTolerantPolicy",
        "must have at most 16 items",
    ),
    # --- in-place restarts (issue 28): ladders that cannot work ----------------------------------
    Case(
        "a replica restartScope InPlace is refused (a rule's rung only)",
        setting(f"{T}.restartScope", "InPlace"),
        f"{T}.restartScope",
        'Unsupported value: "InPlace"',
    ),
    Case(
        "an exceptionalEvent rule with restartScope InPlace is refused",
        setting(f"{T_RULE}.restartScope", "InPlace"),
        f"{T_RULE}.restartScope",
        "restartScope InPlace needs exitCodes",
    ),
    Case(
        "an InPlace rule with backoff is refused",
        each(
            setting(f"{L_CODES}.restartScope", "InPlace"),
            setting(f"{L_CODES}.backoff", {"initialSeconds": 2}),
        ),
        f"{L_CODES}.backoff",
        "restartScope InPlace cannot have backoff",
    ),
    Case(
        "an InPlace rule with excludeNodeSeconds is refused",
        each(setting(f"{L_CODES}.restartScope", "InPlace"), setting(f"{L_CODES}.excludeNodeSeconds", 60)),
        f"{L_CODES}.excludeNodeSeconds",
        "restartScope InPlace cannot have excludeNodeSeconds",
    ),
    Case(
        "an InPlace rule after a rule with the same exitCodes and no restartLimit is refused",
        setting(
            f"{L}.faultTolerantPolicy",
            [
                {"exitCodes": "137", "restartPolicy": "ExitCode"},
                {"exitCodes": "137", "restartPolicy": "ExitCode", "restartScope": "InPlace"},
            ],
        ),
        f"{L}.faultTolerantPolicy",
        "a rule with restartScope InPlace can never act",
    ),
    # --- the pod template ------------------------------------------------------------------------
    Case(
        "a replica without a template is refused",
        deleting(f"{T}.template"),
        f"{T}.template",
        "Required value",
    ),
    Case(
        "a template without containers is refused",
        setting(f"{T}.template.spec.containers", []),
        f"{T}.template.spec.containers",
        "should have at least 1 items",
    ),
    Case(
        "two containers of the same name are refused",
        copying(f"{T}.template.spec.containers[0]", f"{T}.template.spec.containers[1]"),
        f"{T}.template.spec.containers[1]",
        'Duplicate value: {"name":"aitj-0"}',
    ),
    Case(
        "10,000 trainers with plugin.discovery are refused: their host lists would not fit a ConfigMap",
        each(setting(f"{T}.maxReplicas", 10_000), setting(f"{T}.replicas", 10_000)),
        "spec.replicaSpecs",
        "would not fit a ConfigMap (1 MiB)",
    ),
    # --- checkpointOnDrain (issue 28; docs/semantics.md section 26) ----------------------------
    Case(
        "a checkpointOnDrain without a command is refused",
        setting(f"{T}.checkpointOnDrain", {"timeoutSeconds": 30}),
        f"{T}.checkpointOnDrain.command",
        "Required value",
    ),
    Case(
        "a checkpointOnDrain with an empty command is refused",
        setting(f"{T}.checkpointOnDrain", {"command": []}),
        f"{T}.checkpointOnDrain.command",
        "should have at least 1 items",
    ),
    Case(
        "a checkpointOnDrain whose program is empty is refused",
        setting(f"{T}.checkpointOnDrain", {"command": ["", "x"]}),
        f"{T}.checkpointOnDrain.command",
        "command[0] must name the program to run",
    ),
    Case(
        "a checkpointOnDrain deadline past 600 s is refused",
        setting(f"{T}.checkpointOnDrain", {"command": ["true"], "timeoutSeconds": 601}),
        f"{T}.checkpointOnDrain.timeoutSeconds",
        "should be less than or equal to 600",
    ),
    Case(
        "a checkpointOnDrain deadline of 0 is refused",
        setting(f"{T}.checkpointOnDrain", {"command": ["true"], "timeoutSeconds": 0}),
        f"{T}.checkpointOnDrain.timeoutSeconds",
        "should be greater than or equal to 1",
    ),
]

MODEL_ONLY: list[Case] = [
    Case(
        "an init container named like a container is refused by the model only",
        setting(f"{L}.template.spec.initContainers[0].name", "aitj-0"),
        f"{L}.template.spec.containers[0].name",
        "[duplicate container name]",
    ),
    Case(
        "a volumeMount of a volume the pod lacks is refused by the model only",
        setting(f"{T}.template.spec.containers[0].volumeMounts[0].name", "scratch"),
        f"{T}.template.spec.containers[0].volumeMounts[0].name",
        "[unknown volume]",
    ),
    Case(
        "a container name that is no DNS label is refused by the model only",
        setting(f"{T}.template.spec.containers[0].name", "Aitj_0"),
        f"{T}.template.spec.containers[0].name",
        "[container name]",
    ),
    Case(
        "a fraction of a GPU with plugin.discovery is refused by the model only",
        setting(f"{T}.template.spec.containers[0].resources.limits", {"nvidia.com/gpu": "1.5"}),
        f"{T}.template.spec.containers[0].resources.limits[nvidia.com/gpu]",
        "[GPU quantity]",
    ),
]


@dataclass(frozen=True)
class UpdateCase:
    id: str
    before: Mutation  # applied to the seed to make the live job
    edit: Mutation  # applied to the live job's manifest
    path: str | None  # None: the edit is allowed
    fragment: str = ""


def _identity(doc: Doc) -> None:
    pass


NOT_FT = setting("spec.faultTolerant", False)

UPDATE_CASES: list[UpdateCase] = [
    UpdateCase(
        "scaling a fault-tolerant job within its bounds is allowed",
        _identity,
        setting(f"{T}.replicas", 5),
        None,
    ),
    UpdateCase(
        "scaling a job that is not fault-tolerant is refused",
        NOT_FT,
        setting(f"{T}.replicas", 4),
        f"{T}.replicas",
        "unless spec.faultTolerant is true before and after",
    ),
    UpdateCase(
        "turning fault tolerance on and scaling in the same edit is refused",
        NOT_FT,
        each(setting("spec.faultTolerant", True), setting(f"{T}.replicas", 4)),
        f"{T}.replicas",
        "unless spec.faultTolerant is true before and after",
    ),
    UpdateCase(
        "editing a job that is not fault-tolerant without touching replicas is allowed",
        NOT_FT,
        setting(f"{T}.restartLimit", 5),
        None,
    ),
    UpdateCase(
        "changing a replicaType is refused",
        _identity,
        each(
            setting(f"{T}.replicaType", "master"),
            setting(f"{T}.replicas", 1),
            setting(f"{T}.maxReplicas", 1),
            setting(f"{L}.replicaType", "worker"),
        ),
        f"{T}.replicaType",
        "replicaType cannot change after creation",
    ),
    UpdateCase(
        "removing a replica spec is refused",
        _identity,
        deleting(L),
        "spec.replicaSpecs",
        "replica names cannot change after creation",
    ),
]


def apiserver_path(path: str) -> str:
    """apiserver_path turns ``spec.replicaSpecs[trainer].replicas`` into the model's dotted form."""
    return re.sub(r"\[([^\]\d][^\]]*)\]", r".\1", path)


# spec.progress, hang detection (issue 28; docs/semantics.md, "Hangs")
_PROGRESS = {"replica": "launcher", "stallSeconds": 60}
CASES += [
    Case(
        "a progress replica that is no replica spec is refused",
        setting("spec.progress", {**_PROGRESS, "replica": "nosuch"}),
        "spec.progress.replica",
        "progress.replica must name one of spec.replicaSpecs",
    ),
    Case(
        "a stallSeconds below the minimum is refused",
        setting("spec.progress", {**_PROGRESS, "stallSeconds": 5}),
        "spec.progress.stallSeconds",
        "should be greater than or equal to 10",
    ),
    Case(
        "a stallSeconds above a day is refused",
        setting("spec.progress", {**_PROGRESS, "stallSeconds": 86401}),
        "spec.progress.stallSeconds",
        "should be less than or equal to 86400",
    ),
    Case(
        "a progress without stallSeconds is refused",
        setting("spec.progress", {"replica": "launcher"}),
        "spec.progress.stallSeconds",
        "Required value",
    ),
    Case(
        "a progress container that is no DNS label is refused",
        setting("spec.progress", {**_PROGRESS, "container": "Main_1"}),
        "spec.progress.container",
        'container "Main_1" must be a DNS-1123 label',
    ),
    Case(
        "a stepPattern too long is refused",
        setting("spec.progress", {**_PROGRESS, "stepPattern": "x" * 257}),
        "spec.progress.stepPattern",
        "Too long: may not be more than 256 bytes",
    ),
    Case(
        "an unknown exceptionalEvent next to hang is refused",
        setting(f"{T}.faultTolerantPolicy[0].exceptionalEvent", "hang,stall"),
        f"{T}.faultTolerantPolicy[0].exceptionalEvent",
        "PodPreempted, hang",
    ),
]
MODEL_ONLY += [
    Case(
        "a stepPattern that is no regular expression is refused by the model only",
        setting("spec.progress", {**_PROGRESS, "stepPattern": "step (["}),
        "spec.progress.stepPattern",
        "[stepPattern]",
    ),
]
