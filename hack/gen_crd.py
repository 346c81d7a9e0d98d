#!/usr/bin/env python3
"""Generate crds/aitrainingjobs.yaml, the AITrainingJob CustomResourceDefinition.

Usage:
    .venv/bin/python hack/gen_crd.py            # rewrite crds/aitrainingjobs.yaml
    .venv/bin/python hack/gen_crd.py --check    # exit 1 if the committed file is stale

Two sources, so that neither is copied by hand:
- our own fields come from aitj/core/api/ and aitj/core/exitcodes.py (enums, defaults, bounds, the
  exitCodes and exceptionalEvent grammars), the model that parses the same objects;
- each replica's ``template`` is the PodTemplateSpec schema of the Kubernetes release the local
  control plane runs by default, the newest it supports (``aitj/devcluster/versions.py``,
  ``KUBERNETES_NEWEST``, whatever ``$AITJ_KUBERNETES`` says), read from the release's
  own OpenAPI v3 document (``api/openapi-spec/v3/api__v1_openapi.json`` in the Go module cache;
  ``go mod download k8s.io/kubernetes@<that version>`` puts it there).

The upstream schema is made structural the way the apiserver requires of a CRD: ``$ref``s are
inlined; int-or-string and Quantity become ``x-kubernetes-int-or-string``; keywords a CRD
may not carry (patch strategies, unions, group-version-kind) are dropped; upstream defaults
are dropped (the pod gets them when it is created; keeping them would rewrite users' objects)
except on list-map keys, which the apiserver requires to be required or defaulted. Fields are
not ``nullable``: the apiserver then prunes a null (the seed's ``env:`` and
``creationTimestamp: null``) instead of refusing it, as a Pod takes it too, and the stored
object the operator reads carries no nulls. Descriptions are cut to
their first paragraph, and dropped below ``DESCRIPTION_DEPTH`` levels of the template, which
keeps the CRD small enough for a client-side ``kubectl apply`` (its last-applied annotation
is limited to 256 KiB).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aitj.core import api, exitcodes  # noqa: E402
from aitj.core.api import validation  # noqa: E402
from aitj.core.api.replica import (  # noqa: E402
    IN_PLACE_BACKOFF_MESSAGE,
    IN_PLACE_EVENT_MESSAGE,
    IN_PLACE_EXCLUDE_MESSAGE,
    IN_PLACE_UNREACHABLE_MESSAGE,
    INFRASTRUCTURE_FAULTS_MESSAGE,
    WINDOW_LIMIT_MESSAGE,
)
from aitj.core.api.status import status_schema  # noqa: E402
from aitj.devcluster.versions import KUBERNETES_NEWEST as K8S_VERSION  # noqa: E402

K8S_MINOR = ".".join(K8S_VERSION.split(".")[:2])  # v1.37

OPENAPI = (
    Path(os.environ.get("GOMODCACHE", Path.home() / "go/pkg/mod"))
    / f"k8s.io/kubernetes@{K8S_VERSION}/api/openapi-spec/v3/api__v1_openapi.json"
)
OUTPUT = ROOT / "crds/aitrainingjobs.yaml"
DESCRIPTION_DEPTH = 3  # template.spec.<field>.<field> keeps its description; deeper ones do not

Schema = dict[str, Any]

# ---------------------------------------------------------------------------------------------
# The upstream PodTemplateSpec, made structural.

_DROP = {
    "x-kubernetes-patch-strategy",
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-unions",
    "x-kubernetes-group-version-kind",
    "discriminator",
    "default",
    "allOf",
    "$ref",
    "oneOf",
    "format",
    "description",
    "properties",
    "items",
    "additionalProperties",
}
# What the apiserver itself accepts as a quantity (the pattern controller-gen emits).
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_FORMATS = {"int32", "int64", "date-time", "byte", "double"}


class Upstream:
    """Upstream resolves and converts schemas of the upstream OpenAPI document."""

    def __init__(self, document: Schema) -> None:
        self.schemas: dict[str, Schema] = document["components"]["schemas"]

    def ref(self, schema: Schema) -> str | None:
        if "$ref" in schema:
            return str(schema["$ref"]).rsplit("/", 1)[-1]
        if len(schema.get("allOf", ())) == 1:
            return self.ref(schema["allOf"][0])
        return None

    def convert(self, schema: Schema, depth: int, stack: tuple[str, ...] = ()) -> Schema:
        """convert returns the structural form of ``schema`` (its ``$ref`` resolved)."""
        name = self.ref(schema)
        if name is not None:
            if name in stack:
                raise ValueError(f"recursive schema {name}: not expressible in a CRD")
            target = self.schemas[name]
            out = self.convert(target, depth, (*stack, name))
            if "description" in schema:  # the field's own words beat the type's
                out = {"description": _first_paragraph(schema["description"]), **_without(out, "description")}
            if depth > DESCRIPTION_DEPTH:
                out.pop("description", None)
            return out
        return self._convert_plain(schema, depth, stack)

    def _convert_plain(self, schema: Schema, depth: int, stack: tuple[str, ...]) -> Schema:
        out: Schema = {}
        if "description" in schema and depth <= DESCRIPTION_DEPTH:
            out["description"] = _first_paragraph(schema["description"])
        name = stack[-1] if stack else ""
        if name.endswith("resource.Quantity"):
            out.update({"x-kubernetes-int-or-string": True, "pattern": QUANTITY_PATTERN})
            return out
        if schema.get("format") == "int-or-string":
            out["x-kubernetes-int-or-string"] = True
            return out
        if "type" not in schema:
            raise ValueError(f"untyped schema under {stack}: {sorted(schema)}")
        out["type"] = schema["type"]
        if schema.get("format") in _FORMATS:
            out["format"] = schema["format"]
        for key, value in schema.items():
            if key not in _DROP and key not in out:
                out[key] = value
        if "items" in schema:
            out["items"] = self.convert(schema["items"], depth, stack)  # an item is no deeper a field
            if schema.get("x-kubernetes-list-type") == "map":
                self._keep_map_key_defaults(schema, out)
        if "additionalProperties" in schema:
            out["additionalProperties"] = self.convert(schema["additionalProperties"], depth + 1, stack)
        if "properties" in schema:
            out["properties"] = {
                prop: self.convert(sub, depth + 1, stack) for prop, sub in schema["properties"].items()
            }
        return out

    def _keep_map_key_defaults(self, schema: Schema, out: Schema) -> None:
        """A list-map key must be required or defaulted; keep upstream's default for optional keys."""
        name = self.ref(schema["items"])
        upstream_item = self.schemas[name] if name else schema["items"]
        required = set(upstream_item.get("required", ()))
        for key in schema["x-kubernetes-list-map-keys"]:
            if key not in required:
                out["items"]["properties"][key]["default"] = upstream_item["properties"][key]["default"]

    def pod_template(self) -> Schema:
        """pod_template is PodTemplateSpec with our metadata and a PodSpec that needs a container."""
        spec = self.convert({"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}, depth=1)
        spec["properties"]["containers"]["minItems"] = 1
        spec["description"] = (
            f"The pod's spec, validated as a Kubernetes {K8S_MINOR} PodSpec. The operator sets the pod's "
            "restartPolicy to Never (it owns restarts), and adds TRAININGJOB_NAME, "
            "TRAININGJOB_NAMESPACE, TRAININGJOB_REPLICA_NAME, TRAININGJOB_REPLICA_INDEX and "
            "TRAININGJOB_REPLICA_RESTARTCOUNT to every container, init containers included."
        )
        return {
            "description": (
                "The pod every replica of this spec runs: a Kubernetes PodTemplateSpec, validated "
                "as one at admission."
            ),
            "type": "object",
            "required": ["spec"],
            "properties": {"metadata": template_metadata(), "spec": spec},
        }


def _first_paragraph(text: str) -> str:
    return text.split("\n\n", 1)[0].strip()


def _without(schema: Schema, key: str) -> Schema:
    return {k: v for k, v in schema.items() if k != key}


def template_metadata() -> Schema:
    string_map = {"type": "object", "additionalProperties": {"type": "string"}}
    return {
        "description": (
            "Labels and annotations for the pods. The operator names the pods itself "
            "(<job>-<replica>-<5 chars>-<index>) and puts them in the job's namespace, so name, "
            "generateName and namespace here are ignored."
        ),
        "type": "object",
        "properties": {
            "labels": {"description": "Labels added to every pod of this replica spec.", **string_map},
            "annotations": {
                "description": "Annotations added to every pod of this replica spec.",
                **string_map,
            },
            "name": {"description": "Ignored.", "type": "string"},
            "generateName": {"description": "Ignored.", "type": "string"},
            "namespace": {"description": "Ignored.", "type": "string"},
            "creationTimestamp": {
                "description": "Ignored; generated manifests carry it as null.",
                "type": "string",
                "format": "date-time",
            },
        },
    }


# ---------------------------------------------------------------------------------------------
# Our fields.


def enum_values(members: Any) -> list[str]:
    return [m.value for m in members]


def string(description: str, **extra: Any) -> Schema:
    return {"description": description, "type": "string", **extra}


def integer(description: str, minimum: int, maximum: int, fmt: str = "int32", **extra: Any) -> Schema:
    return {
        "description": description,
        "type": "integer",
        "format": fmt,
        "minimum": minimum,
        "maximum": maximum,
        **extra,
    }


def rule(
    expression: str,
    message: str = "",
    *,
    message_expression: str = "",
    field_path: str = "",
    reason: str = "",
) -> Schema:
    out: Schema = {"rule": expression}
    if message:
        out["message"] = message
    if message_expression:
        out["messageExpression"] = message_expression
    if field_path:
        out["fieldPath"] = field_path
    if reason:
        out["reason"] = reason
    return out


def cel_str(text: str) -> str:
    """cel_str writes a CEL single-quoted string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def checkpoint_on_drain_schema() -> Schema:
    """checkpoint_on_drain_schema: a replica's hook before a drain (docs/semantics.md section 26;
    aitj/core/api/drain_checkpoint.py says the same)."""
    return {
        "description": (
            "Our addition: a command the operator execs in the pod's first container when the pod's "
            "node is cordoned (kubectl drain), before the drain may evict it: the replica's "
            "PodDisruptionBudget refuses every eviction until the command has exited or "
            "timeoutSeconds have passed. For example, make the training checkpoint now. Needs the "
            "job's budgets (not the max-unavailable annotation none)."
        ),
        "type": "object",
        "required": ["command"],
        "properties": {
            "command": {
                "description": "The command and its arguments (no shell unless it names one).",
                "type": "array",
                "minItems": 1,
                "maxItems": api.MAX_COMMAND_ITEMS,
                "x-kubernetes-list-type": "atomic",
                "items": {"type": "string", "maxLength": api.MAX_COMMAND_ITEM_LENGTH},
            },
            "timeoutSeconds": integer(
                "The longest a drain waits for the command, in seconds (default "
                f"{api.DEFAULT_CHECKPOINT_SECONDS}); keep it below the drain's own --timeout.",
                1,
                api.MAX_CHECKPOINT_SECONDS,
            ),
        },
        "x-kubernetes-validations": [
            rule(
                "size(self.command) == 0 || self.command[0] != ''",
                api.CHECKPOINT_COMMAND_MESSAGE,
                field_path=".command",
                reason="FieldValueInvalid",
            )
        ],
    }


def recovery_properties() -> Schema:
    """recovery_properties: a rule's optional budget, backoff and node exclusion (issue 15)."""
    seconds = api.MAX_SECONDS
    return {
        "restartLimit": integer(
            "Most restarts this rule makes per replica type (all its indices together) within "
            "restartWindowSeconds, or for the job's life when that is unset. Past it the rule does "
            "not match: the failure falls to the next rule, then to failPolicy. The replica's own "
            f"restartLimit stays the overall cap. At most {api.MAX_WINDOW_RESTARTS} with "
            "restartWindowSeconds.",
            0,
            seconds,
        ),
        "restartWindowSeconds": integer(
            "The window of restartLimit, in seconds: at most restartLimit restarts within any window "
            "of this length. Unset: the job's life. Needs restartLimit.",
            1,
            seconds,
        ),
        "backoff": {
            "description": (
                "Delay the replacement of an index this rule restarted before: initialSeconds, then "
                "twice that at each further failure in a row, up to maxSeconds. Forgotten once the "
                "index ran resetAfterSeconds without failing. Unset: replacements are created at once."
            ),
            "type": "object",
            "required": ["initialSeconds"],
            "properties": {
                "initialSeconds": integer("The first delay, in seconds.", 1, seconds),
                "maxSeconds": integer(
                    f"The longest delay, in seconds (default {api.DEFAULT_BACKOFF_MAX}, or "
                    "initialSeconds if that is more).",
                    1,
                    seconds,
                ),
                "resetAfterSeconds": integer(
                    "Seconds an index must run without failing for its delays to start over "
                    f"(default {api.DEFAULT_BACKOFF_RESET_AFTER}).",
                    1,
                    seconds,
                ),
            },
            "x-kubernetes-validations": [
                rule(
                    "!has(self.maxSeconds) || self.maxSeconds >= self.initialSeconds",
                    "maxSeconds must not be less than initialSeconds",
                    field_path=".maxSeconds",
                ),
            ],
        },
        "excludeNodeSeconds": integer(
            "Keep a replacement this rule makes off the node the failed pod ran on for this many "
            "seconds (a required node anti-affinity on kubernetes.io/hostname, ANDed with the "
            "template's own). If no other node fits, the replacement waits Pending; "
            "status.excludedNodes lists the exclusions in force.",
            1,
            seconds,
        ),
        "infrastructureFaults": string(
            "Charge (default) or Exempt: whether the restarts this rule makes for infrastructure "
            "faults (nodeNotReady: a node gone, NotReady, showing a health signal or drained; "
            "PodPreempted; PodEvicted) count toward its restartLimit. Exempt: they neither count "
            "nor are refused by it, so maintenance and preemption do not use up the budget meant "
            "for the training's own faults. Needs restartLimit. The replica's restartLimit and "
            "RestartCount still count every restart (docs/semantics.md section 25).",
            enum=enum_values(api.InfrastructureFaults),
        ),
    }


def in_place_rules() -> list[Schema]:
    """in_place_rules: what a rule with restartScope InPlace cannot have (issue 28): the kubelet
    restarts containers on their exit codes only, at once, on the pod's own node."""
    in_place = "has(self.restartScope) && self.restartScope == 'InPlace'"
    return [
        rule(f"!({in_place}) || has(self.exitCodes)", IN_PLACE_EVENT_MESSAGE, field_path=".restartScope"),
        rule(f"!({in_place}) || !has(self.backoff)", IN_PLACE_BACKOFF_MESSAGE, field_path=".backoff"),
        rule(
            f"!({in_place}) || !has(self.excludeNodeSeconds)",
            IN_PLACE_EXCLUDE_MESSAGE,
            field_path=".excludeNodeSeconds",
        ),
    ]


def in_place_reachable() -> Schema:
    """in_place_reachable: an InPlace rule after a rule with the same exitCodes (as written) and
    no restartLimit can never act: that rule is never spent and always matches first."""
    return rule(
        "self.all(r, !has(r.restartScope) || r.restartScope != 'InPlace' || !has(r.exitCodes) || "
        "!self.exists(e, self.indexOf(e) < self.indexOf(r) && has(e.exitCodes) && "
        "string(e.exitCodes) == string(r.exitCodes) && !has(e.restartLimit)))",
        IN_PLACE_UNREACHABLE_MESSAGE,
    )


def rule_schema() -> Schema:
    """rule_schema: one faultTolerantPolicy rule."""
    codes = cel_str(exitcodes.LIST_PATTERN)
    events = cel_str(api.EVENTS_PATTERN)
    return {
        "description": (
            "A fault-tolerance rule. Rules are tried in order on a pod failure; the first that "
            "matches restarts with its restartScope. A failure no rule matches is a replica "
            "failure, handled by failPolicy. A rule has exactly one of exitCodes (with restartPolicy "
            "ExitCode) or exceptionalEvent (with restartPolicy OnNodeFail), and is active only when "
            "the replica's restartPolicy allows its kind and spec.faultTolerant is true."
        ),
        "type": "object",
        "required": ["restartPolicy"],
        "properties": {
            "exitCodes": {
                "description": (
                    "Exit codes that trigger this rule: a number (137) or a string of comma-separated "
                    'codes 0-255 and ranges low-high, spaces allowed ("129,101", "130-140"). A pod\'s '
                    "exit code is the first non-zero exit code among its containers, in spec order."
                ),
                "x-kubernetes-int-or-string": True,
                "maxLength": exitcodes.MAX_LENGTH,
                "x-kubernetes-validations": [
                    rule(
                        f"type(self) == int ? (self >= {exitcodes.MIN_CODE} && self <= {exitcodes.MAX_CODE})"
                        f" : self.matches({codes})",
                        f"exitCodes must be {exitcodes.GRAMMAR_HINT}",
                    ),
                    rule(
                        f"type(self) == int || !self.matches({codes}) || self.split(',').all(p, "
                        "!p.contains('-') || int(p.split('-')[0].trim()) <= int(p.split('-')[1].trim()))",
                        "exitCodes has a reversed range: write ranges low-high, e.g. 130-140",
                    ),
                ],
            },
            "exceptionalEvent": string(
                "Events that trigger this rule, comma-separated: nodeNotReady (the pod's node is "
                "NotReady, Unknown or gone), PodForceDeleted (the pod vanished unfinished without the "
                "operator asking), and our additions PodEvicted (eviction API, kubelet eviction, "
                "DisruptionTarget condition) and PodPreempted (preempted by the scheduler).",
                maxLength=api.MAX_EVENTS_LENGTH,
                **{
                    "x-kubernetes-validations": [
                        rule(
                            f"self.matches({events})",
                            message_expression=(
                                f"'exceptionalEvent \"' + self + '\" must be {api.EVENTS_HINT}'"
                            ),
                        )
                    ]
                },
            ),
            "restartPolicy": string(
                "ExitCode for a rule with exitCodes, OnNodeFail for a rule with exceptionalEvent.",
                enum=enum_values(api.RULE_RESTART_POLICIES),
            ),
            "restartScope": string(
                "What a restart recreates: the failed Pod (same index, new name), every pod of this "
                "Replica spec, or All pods of the job; or InPlace: the kubelet restarts the pod's "
                "containers in the same pod, on the same node (Kubernetes' container restart rules, "
                "RestartAllContainers), while the rule's budget lasts; a cluster that does not serve "
                "it gets a pod replacement instead. Unset: the replica's restartScope.",
                enum=enum_values(api.RestartScope),
            ),
            **recovery_properties(),
        },
        "x-kubernetes-validations": [
            rule(
                "has(self.exitCodes) != has(self.exceptionalEvent)",
                "a rule needs exactly one of exitCodes or exceptionalEvent",
            ),
            rule(
                "!has(self.restartWindowSeconds) || has(self.restartLimit)",
                "restartWindowSeconds needs restartLimit (the restarts allowed in it)",
                field_path=".restartWindowSeconds",
            ),
            rule(
                "!has(self.infrastructureFaults) || self.infrastructureFaults != 'Exempt' "
                "|| has(self.restartLimit)",
                INFRASTRUCTURE_FAULTS_MESSAGE,
                field_path=".infrastructureFaults",
            ),
            rule(
                "!has(self.restartWindowSeconds) || !has(self.restartLimit) "
                f"|| self.restartLimit <= {api.MAX_WINDOW_RESTARTS}",
                WINDOW_LIMIT_MESSAGE,
                field_path=".restartLimit",
            ),
            *in_place_rules(),
            rule(
                "!has(self.exitCodes) || !has(self.restartPolicy) || self.restartPolicy == 'ExitCode'",
                message_expression=(
                    "'a rule with exitCodes needs restartPolicy: ExitCode, not ' + self.restartPolicy"
                ),
                field_path=".restartPolicy",
            ),
            rule(
                "!has(self.exceptionalEvent) || !has(self.restartPolicy) || "
                "self.restartPolicy == 'OnNodeFail'",
                message_expression=(
                    "'a rule with exceptionalEvent needs restartPolicy: OnNodeFail, not ' + "
                    "self.restartPolicy"
                ),
                field_path=".restartPolicy",
            ),
        ],
    }


def replica_schema(template: Schema) -> Schema:
    """replica_schema: one entry of spec.replicaSpecs."""
    seconds = api.MAX_SECONDS
    master = "has(self.replicaType) && self.replicaType == 'master'"
    return {
        "description": (
            "One replica type of the job (the seed has launcher, a master, and trainer, the "
            "workers). Pods are named <job>-<replica>-<5 chars>-<index>; a replacement keeps the "
            "index and gets a new 5-character part."
        ),
        "type": "object",
        "required": ["template"],
        "properties": {
            "replicaType": string(
                "master: the launcher / coordinator, exactly one pod, created once the workers run. "
                "worker (default): the workers. At most one replica spec may be a master. Cannot change.",
                enum=enum_values(api.ReplicaType),
                default=api.DEFAULT_REPLICA_TYPE.value,
                **{
                    "x-kubernetes-validations": [
                        rule("self == oldSelf", "replicaType cannot change after creation")
                    ]
                },
            ),
            "replicas": integer(
                "Desired number of pods (default 1). With spec.faultTolerant, edit it (or `kubectl scale` "
                "the trainer replica) to scale within [minReplicas, maxReplicas]; without, it cannot "
                "change after creation.",
                1,
                api.MAX_REPLICAS,
                default=api.DEFAULT_REPLICAS,
            ),
            "minReplicas": integer(
                "Fewest pods the replica may be scaled to. Unset: replicas.", 1, api.MAX_REPLICAS
            ),
            "maxReplicas": integer(
                "Most pods the replica may be scaled to. Unset: replicas.", 1, api.MAX_REPLICAS
            ),
            "completePolicy": string(
                "When this replica type has succeeded: All (default) its pods succeeded, Any one pod "
                "did, Rank0 the pod of index 0 did, None never (e.g. workers that run until the "
                "launcher ends).",
                enum=enum_values(api.REPLICA_POLICIES),
                default=api.DEFAULT_REPLICA_COMPLETE_POLICY.value,
            ),
            "failPolicy": string(
                "When this replica type has failed (a failure no rule restarts, or restartLimit "
                "exhausted): Any (default) pod failed, All pods did, Rank0 the pod of index 0 did, None "
                "never.",
                enum=enum_values(api.REPLICA_POLICIES),
                default=api.DEFAULT_REPLICA_FAIL_POLICY.value,
            ),
            "restartPolicy": string(
                "Which failures may be restarted at all: Never (default) none; ExitCode only those "
                "matching exitCodes rules; OnNodeFail only those matching exceptionalEvent rules; "
                "OnNodeFailWithExitCode both kinds of rule; OnFailure and Always any failure. The "
                "pod's own restartPolicy is forced to Never: the operator owns restarts.",
                enum=enum_values(api.RestartPolicy),
                default=api.DEFAULT_RESTART_POLICY.value,
            ),
            "restartScope": string(
                "What a restart recreates: Pod (default) the failed pod under the same index, Replica "
                "every pod of this replica spec, All every pod of the job. (InPlace is a rule's only.)",
                enum=enum_values(api.REPLICA_SCOPES),
                default=api.DEFAULT_RESTART_SCOPE.value,
            ),
            "restartLimit": integer(
                "Restarts allowed for this replica type, counted in status.RestartCount.<name>. Unset: "
                "unlimited. Exhausted: the failure goes to failPolicy.",
                0,
                seconds,
            ),
            "restartTimeLimit": integer(
                "Seconds a restart waits for the old pod to terminate before force-deleting it (grace "
                "period 0), so a pod stuck Terminating on a dead node cannot hang the job. Default 60. "
                "Decided by this project: CCE does not document it.",
                0,
                seconds,
                default=api.DEFAULT_RESTART_TIME_LIMIT,
            ),
            "restartTimeout": integer(
                "Seconds a replacement pod may take to reach Running (scheduling, image pull). Past it "
                "the restart has failed (reason RestartTimeout) and failPolicy decides. Unset: no limit. "
                "Decided by this project: CCE does not document it.",
                1,
                seconds,
            ),
            "scaleTimeout": integer(
                "Our addition (Arena's `scaleout --timeout`): seconds a scale-out may take for its new "
                "pods to reach Running. Past it the new pods are removed, replicas goes back, and "
                "status.scaleHistory says why. Default 600.",
                1,
                seconds,
                default=api.DEFAULT_SCALE_TIMEOUT,
            ),
            "scaleInGracePeriod": integer(
                "Our addition: seconds the pods a scale-in removes stay alive after leaving the "
                "discovery host list, for their workers to stop, before they are deleted. Unset: "
                f"{api.DEFAULT_SCALE_IN_GRACE_PERIOD} (about one kubelet sync period, the time a host "
                "list edit takes to reach the launcher's file). Pods not in the list go at once.",
                0,
                seconds,
            ),
            "scaleInpods": {
                "description": (
                    "CCE (its spelling): names of this replica's pods to remove first when replicas "
                    "goes down (`aitj scalein --pods`); the highest indices make up the rest. Their "
                    "indices stay vacant until a scale-out fills them. Names that are not current "
                    "pods are ignored."
                ),
                "type": "array",
                "maxItems": api.MAX_REPLICAS,
                "x-kubernetes-list-type": "atomic",
                "items": {"type": "string", "maxLength": api.MAX_POD_NAME_LENGTH},
            },
            "checkpointOnDrain": checkpoint_on_drain_schema(),
            "faultTolerantPolicy": {
                "description": (
                    "Ordered fault-tolerance rules, used when spec.faultTolerant is true. At most "
                    f"{api.MAX_RULES}."
                ),
                "type": "array",
                "maxItems": api.MAX_RULES,
                "x-kubernetes-list-type": "atomic",
                "items": rule_schema(),
                "x-kubernetes-validations": [in_place_reachable()],
            },
            "template": template,
        },
        "x-kubernetes-validations": [
            rule(
                "!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",
                "minReplicas must not be greater than maxReplicas",
                field_path=".minReplicas",
            ),
            rule(
                "!has(self.minReplicas) || self.replicas >= self.minReplicas",
                "replicas must not be less than minReplicas",
                field_path=".replicas",
            ),
            rule(
                "!has(self.maxReplicas) || self.replicas <= self.maxReplicas",
                "replicas must not be greater than maxReplicas",
                field_path=".replicas",
            ),
            *(
                rule(
                    f"!({master}) || !has(self.{key}) || self.{key} == 1",
                    f"a master replica (replicaType: master) runs exactly one pod: {key} must be 1",
                    field_path=f".{key}",
                )
                for key in ("replicas", "minReplicas", "maxReplicas")
            ),
        ],
    }


def progress_schema() -> Schema:
    """progress_schema: spec.progress, hang detection (docs/semantics.md, "Hangs"). The parser
    (aitj.core.api.progress) says the same, and also refuses a stepPattern RE2 cannot compile
    (the operator matches with RE2): CEL cannot tell whether a string is a regular expression."""
    container = cel_str(f"^{api.DNS_1123_LABEL}$")
    return {
        "description": (
            "Our addition (issue 28): hang detection, no change to the training code. The pod of "
            "index 0 of `replica` is watched: its log is read (the last lines, with the kubelet's "
            "timestamps) every stallSeconds/20 seconds (1 to 60). No new line (one matching "
            "stepPattern when set) for stallSeconds while the job is Running with all its pods is a "
            "`hang`, an exceptional event that faultTolerantPolicy rules restart like the others "
            "(`exceptionalEvent: hang`). Unset: no hang detection."
        ),
        "type": "object",
        "required": ["replica", "stallSeconds"],
        "properties": {
            "replica": string(
                "The replica spec whose pod of index 0 is watched (the launcher, or the worker of rank 0).",
                maxLength=api.DNS_LABEL_MAX,
            ),
            "stallSeconds": integer(
                "Seconds without a progress line, the job running, that make a hang.",
                api.MIN_STALL_SECONDS,
                api.MAX_STALL_SECONDS,
            ),
            "stepPattern": string(
                "A regular expression (RE2 syntax, searched in each line; no lookarounds nor "
                "backreferences): only matching lines are progress (e.g. a step line). Unset: any "
                "line is. It must be on one of the last 100 "
                "lines (64 KiB) at each read of the log.",
                maxLength=api.MAX_STEP_PATTERN_LENGTH,
            ),
            "container": string(
                "The container whose log is read. Unset: the pod's first container.",
                maxLength=api.DNS_LABEL_MAX,
                **{
                    "x-kubernetes-validations": [
                        rule(
                            f"self.matches({container})",
                            message_expression=(
                                "'container \"' + self + '\" must be a DNS-1123 label (a container\\'s name)'"
                            ),
                        )
                    ]
                },
            ),
        },
    }


def spec_schema(template: Schema) -> Schema:
    replica_name = cel_str(f"^{api.DNS_1123_LABEL}$")
    changed = (
        "self.replicaSpecs.filter(k, k in oldSelf.replicaSpecs && "
        "self.replicaSpecs[k].replicas != oldSelf.replicaSpecs[k].replicas)"
    )
    return {
        "description": "The desired training job.",
        "type": "object",
        "required": ["replicaSpecs"],
        "properties": {
            "frameworkType": string(
                "The training framework. Informational: the pods' TRAININGJOB_FRAMEWORK variable and "
                "kubectl's FRAMEWORK column; it turns no plugin on or off.",
                enum=enum_values(api.FrameworkType),
            ),
            "faultTolerant": {
                "description": (
                    "true turns on faultTolerantPolicy rules and elastic scaling (editing replicas of "
                    "a running job). false (default): rules are ignored, only each replica's "
                    "restartPolicy applies, and replicas cannot change after creation."
                ),
                "type": "boolean",
                "default": api.DEFAULT_FAULT_TOLERANT,
            },
            "completePolicy": string(
                "When the job has succeeded, over the replica types that take part (completePolicy "
                "not None): All (default) of them succeeded, Any one did, None never decides. Success "
                "is checked before failure.",
                enum=enum_values(api.JOB_POLICIES),
                default=api.DEFAULT_JOB_COMPLETE_POLICY.value,
            ),
            "failPolicy": string(
                "When the job has failed, over the replica types: Any (default) one failed, All did, "
                "None never decides.",
                enum=enum_values(api.JOB_POLICIES),
                default=api.DEFAULT_JOB_FAIL_POLICY.value,
            ),
            "cleanPodPolicy": string(
                "What to delete when the job finishes: All (default) pods and services, Running only "
                "pods still running, None nothing.",
                enum=enum_values(api.CleanPodPolicy),
                default=api.DEFAULT_CLEAN_POD_POLICY.value,
            ),
            "plugin": {
                "description": (
                    'Plugins, each turned on by its key being present (CCE writes `ssh: [""]`); the '
                    "list's contents are not used."
                ),
                "type": "object",
                "properties": {
                    key: {
                        "description": text,
                        "type": "array",
                        "nullable": True,
                        "maxItems": api.MAX_PLUGIN_ITEMS,
                        "items": {"type": "string", "maxLength": api.MAX_PLUGIN_ITEM_LENGTH},
                    }
                    for key, text in (
                        (
                            "ssh",
                            "A per-job SSH key pair in a Secret, mounted in every pod, so the launcher "
                            "can reach the workers (horovodrun, mpirun).",
                        ),
                        (
                            "discovery",
                            "A ConfigMap with the current worker host list and an executable "
                            "/etc/edl/discover_hosts.sh (Horovod elastic's host discovery script), mounted "
                            "in the launcher and kept current on every scale and replacement.",
                        ),
                    )
                },
            },
            "priority": string(
                "Job priority: a pod label, mapped to a PriorityClass by the operator's configuration.",
                enum=enum_values(api.Priority),
            ),
            "timeLimit": integer(
                "Seconds the job may run, counted from Running. Exceeded: phase Timeout, pods cleaned "
                "per cleanPodPolicy. Unset: no limit.",
                1,
                api.MAX_SECONDS,
                fmt="int64",
            ),
            "suspend": {
                "description": (
                    "true: the job runs no pods (those it has are deleted), counts no restarts and runs "
                    "no time limit; false again resumes it, its pods created afresh, RestartCount kept. "
                    "As batch/v1 Job's: what Kueue sets to admit and preempt a job."
                ),
                "type": "boolean",
                "default": api.DEFAULT_SUSPEND,
            },
            "progress": progress_schema(),
            "replicaSpecs": {
                "description": (
                    "The job's replica types by name (a DNS-1123 label, part of pod names), e.g. "
                    f"launcher and trainer. 1 to {api.MAX_REPLICA_SPECS}; the names cannot change after "
                    f"creation. `kubectl scale` drives the one named {api.SCALE_REPLICA}."
                ),
                "type": "object",
                "minProperties": 1,
                "maxProperties": api.MAX_REPLICA_SPECS,
                "additionalProperties": replica_schema(template),
                "x-kubernetes-validations": [
                    rule(
                        f"self.all(k, size(k) <= {api.MAX_REPLICA_NAME_LENGTH} && k.matches({replica_name}))",
                        "replica names must be DNS-1123 labels (lower-case letters, digits and '-', "
                        f"at most {api.MAX_REPLICA_NAME_LENGTH} characters): they are part of pod names",
                    ),
                    rule(
                        "self.filter(k, self[k].replicaType == 'master').size() <= 1",
                        "at most one replica spec may have replicaType: master",
                    ),
                ],
            },
        },
        "x-kubernetes-validations": [
            rule(
                "!has(self.progress) || self.progress.replica in self.replicaSpecs",
                api.UNKNOWN_REPLICA,
                field_path=".progress.replica",
            ),
            rule(
                "oldSelf.replicaSpecs.all(k, k in self.replicaSpecs) && "
                "self.replicaSpecs.all(k, k in oldSelf.replicaSpecs)",
                "replica names cannot change after creation",
                field_path=".replicaSpecs",
            ),
            rule(
                "(self.faultTolerant && oldSelf.faultTolerant) || " + changed + ".size() == 0",
                "replicas cannot change after creation unless spec.faultTolerant is true before and after "
                "the edit",
                field_path=".replicaSpecs",
            ),
        ],
    }


def crd(upstream: Upstream) -> Schema:
    template = upstream.pod_template()
    job_name = cel_str(f"^{api.DNS_1035_LABEL}$")
    top = "has(self.spec) && has(self.spec.replicaSpecs)"
    most = (
        "(has(self.spec.replicaSpecs[k].maxReplicas) && self.spec.replicaSpecs[k].maxReplicas > "
        "self.spec.replicaSpecs[k].replicas ? self.spec.replicaSpecs[k].maxReplicas : "
        "self.spec.replicaSpecs[k].replicas)"
    )
    last_index = f"{most} - 1"
    # validation.discovery_bytes, in CEL: the longest host of replica k is "<job>-<k>-xxxxx-<last>.<job>".
    host = f"(2 * size(self.metadata.name) + size(k) + {validation.HOST_EXTRA} + size(string({last_index})))"
    discovery = "has(self.spec.plugin) && has(self.spec.plugin.discovery)"
    discovery_bytes = f"self.spec.replicaSpecs.map(k, {most} * (3 * {host} + {validation.LINE_EXTRA})).sum()"
    too_long = (
        f"size(self.metadata.name) + size(k) + {api.NAME_PART_LENGTH + 3} + size(string({last_index})) "
        f"> {api.MAX_POD_NAME_LENGTH}"
    )
    schema = {
        "description": (
            "AITrainingJob runs a distributed training job (Horovod, Paddle, ...) as replica types of "
            "pods, restarts failed pods by faultTolerantPolicy rules, and scales elastically. The API "
            "of Baidu CCE's AI Training Operator; see docs/api.md."
        ),
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": string("The API version: kongming.cce.baiudbce.com/v1."),
            "kind": string("AITrainingJob."),
            "metadata": {
                "type": "object",
                "properties": {"name": {"type": "string", "maxLength": api.MAX_NAME_LENGTH}},
            },
            "spec": spec_schema(template),
            "status": status_schema(),  # from the types in aitj/core/api/status.py
        },
        "x-kubernetes-validations": [
            rule(
                f"self.metadata.name.matches({job_name})",
                message_expression=(
                    "'job name \"' + self.metadata.name + '\" must be a DNS-1035 label (lower-case letters, "
                    "digits and \\'-\\', starting with a letter): it names the job\\'s headless Service'"
                ),
                field_path=".metadata.name",
            ),
            rule(
                f"!({top}) || !self.spec.replicaSpecs.exists(k, {too_long})",
                "the job name and a replica name make pod names (<job>-<replica>-xxxxx-<index>) longer "
                f"than {api.MAX_POD_NAME_LENGTH} characters: shorten the job or replica name",
                field_path=".metadata.name",
            ),
            rule(
                f"!({top}) || !({discovery}) || {discovery_bytes} <= {validation.DISCOVERY_BUDGET}",
                validation.DISCOVERY_TOO_BIG,
                field_path=".spec.replicaSpecs",
            ),
        ],
    }
    trainer = api.SCALE_REPLICA
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{api.PLURAL}.{api.GROUP}",
            "labels": {"app.kubernetes.io/name": "aitj", "app.kubernetes.io/component": "crd"},
        },
        "spec": {
            "group": api.GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": api.KIND,
                "listKind": f"{api.KIND}List",
                "plural": api.PLURAL,
                "singular": api.KIND.lower(),
                "shortNames": [api.SHORT_NAME],
                "categories": ["all", "aitj", "training"],
            },
            "versions": [
                {
                    "name": api.VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": f".spec.replicaSpecs.{trainer}.replicas",
                            "statusReplicasPath": ".status.trainerReplicas",
                            "labelSelectorPath": ".status.selector",
                        },
                    },
                    "additionalPrinterColumns": [
                        {
                            "name": "Phase",
                            "type": "string",
                            "jsonPath": ".status.phase",
                            "description": "Where the job is in its life.",
                        },
                        {
                            "name": "Trainers",
                            "type": "integer",
                            "jsonPath": f".status.replicaStatuses.{trainer}.running",
                            "description": f"Running pods of the {trainer} replica.",
                        },
                        {
                            "name": "Desired",
                            "type": "integer",
                            "jsonPath": f".spec.replicaSpecs.{trainer}.replicas",
                            "description": f"Desired pods of the {trainer} replica.",
                        },
                        {
                            "name": "Restarts",
                            "type": "integer",
                            "jsonPath": ".status.totalRestarts",
                            "description": "Restarts so far, all replica types together.",
                        },
                        {
                            "name": "Degraded",
                            "type": "string",
                            "jsonPath": ".status.degraded.reason",
                            "description": "Why the job runs short of pods, when it does.",
                        },
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                        {
                            "name": "Framework",
                            "type": "string",
                            "jsonPath": ".spec.frameworkType",
                            "priority": 1,
                        },
                        {
                            "name": "Fault-Tolerant",
                            "type": "boolean",
                            "jsonPath": ".spec.faultTolerant",
                            "priority": 1,
                        },
                        {
                            "name": "Message",
                            "type": "string",
                            "jsonPath": '.status.conditions[?(@.status=="True")].message',
                            "priority": 1,
                            "description": "The current condition's message.",
                        },
                    ],
                    "selectableFields": [{"jsonPath": ".spec.frameworkType"}],
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


HEADER = f"""\
# The AITrainingJob CustomResourceDefinition (kongming.cce.baiudbce.com/v1).
# Generated by hack/gen_crd.py from aitj/core/api/, aitj/core/exitcodes.py and the PodTemplateSpec of
# Kubernetes {K8S_VERSION}: do not edit by hand; change those and run
#   .venv/bin/python hack/gen_crd.py
# Install: kubectl apply --server-side -f crds/   (plain `kubectl apply` works too)
"""


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def render(document: Schema) -> str:
    return HEADER + yaml.dump(document, Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--openapi", type=Path, default=OPENAPI, help="Kubernetes OpenAPI v3 api/v1 document")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true", help="fail if --output is not up to date")
    args = parser.parse_args(argv)
    if not args.openapi.exists():
        print(
            f"{args.openapi} is missing: run `go mod download k8s.io/kubernetes@{K8S_VERSION}` "
            f"(in aitj/devcluster/gomod/kubernetes-{K8S_MINOR.removeprefix('v')})",
            file=sys.stderr,
        )
        return 2
    text = render(crd(Upstream(json.loads(args.openapi.read_text()))))
    if args.check:
        if not args.output.exists() or args.output.read_text() != text:
            print(f"{args.output} is stale: run .venv/bin/python hack/gen_crd.py", file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(f"wrote {args.output} ({len(text.encode())} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
