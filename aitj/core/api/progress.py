"""spec.progress: the opt-in hang detection's settings (docs/semantics.md, "Hangs"), parsed.

Pure. ``parse_progress`` reads the object and refuses a bad one with a FieldError per field, in
the words of the CRD's rules (hack/gen_crd.py writes the same bounds and messages), plus the
one check the CRD cannot make: ``stepPattern`` must compile. CEL has no way to ask whether a
string is a regular expression (Kubernetes' CEL regex library only matches and finds; a bad
pattern there is an evaluation error, not a refusal with a reason), and the operator matches
with RE2 (aitj.core.stepmatch: linear time, whatever the pattern), so RE2 is the judge:
``aitj submit`` and the operator's own parse refuse a pattern RE2 does not take (a lookaround,
a backreference, a counted repetition over 1,000), naming the field (one of
MODEL_ONLY_CHECKS, tagged ``[stepPattern]``).
"""

from __future__ import annotations

from collections.abc import Collection

from aitj.core.api.model import MAX_STALL_SECONDS, MAX_STEP_PATTERN_LENGTH, MIN_STALL_SECONDS, Progress
from aitj.core.api.names import DNS_LABEL_MAX, is_dns1123_label
from aitj.core.api.reader import FieldError, Fields, quote
from aitj.core.stepmatch import PatternError, compile_step_pattern

PROGRESS_FIELDS = ("replica", "stallSeconds", "stepPattern", "container")
UNKNOWN_REPLICA = "progress.replica must name one of spec.replicaSpecs"


def parse_progress(value: object, replicas: Collection[str], errors: list[FieldError]) -> Progress | None:
    """parse_progress: spec.progress (``value``; None: absent) given the job's replica names."""
    if value is None:
        return None
    f = Fields(value, "spec.progress", errors, PROGRESS_FIELDS)
    replica = f.string("replica", DNS_LABEL_MAX)
    if replica is None:
        if f.data:
            errors.append(FieldError(f.at("replica"), "Required value"))
        return None
    if replicas and replica not in replicas:
        f.error("replica", UNKNOWN_REPLICA)
    stall = f.optional_integer("stallSeconds", MIN_STALL_SECONDS, MAX_STALL_SECONDS)
    if stall is None and not f.has("stallSeconds"):
        errors.append(FieldError(f.at("stallSeconds"), "Required value"))
    pattern = f.string("stepPattern", MAX_STEP_PATTERN_LENGTH)
    if pattern is not None:
        try:
            compile_step_pattern(pattern)
        except PatternError as e:
            f.error("stepPattern", f"[stepPattern] {quote(pattern)} is not an RE2 regular expression: {e}")
    container = f.string("container", DNS_LABEL_MAX)
    if container is not None and not is_dns1123_label(container):
        f.error("container", f"container {quote(container)} must be a DNS-1123 label (a container's name)")
    return Progress(replica, stall or MIN_STALL_SECONDS, pattern, container)
