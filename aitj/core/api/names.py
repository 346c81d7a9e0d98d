"""The API's names and bounds: group, version, kind, the labels the operator sets, the limits.

Pure, and free of the model: hack/gen_crd.py writes these into the CRD, and everything that
names an object or checks a name (the model, the renderer) takes them from here.
"""

from __future__ import annotations

import re

GROUP = "kongming.cce.baiudbce.com"  # the seed's spelling, so CCE manifests apply verbatim
VERSION = "v1"
KIND = "AITrainingJob"
PLURAL = "aitrainingjobs"
SHORT_NAME = "aitj"
API_VERSION = f"{GROUP}/{VERSION}"

# Labels and annotations the operator puts on what it creates.
LABEL_PREFIX = "aitj.kongming.cce.baiudbce.com"
LABEL_JOB = f"{LABEL_PREFIX}/job-name"
LABEL_REPLICA = f"{LABEL_PREFIX}/replica-name"
LABEL_INDEX = f"{LABEL_PREFIX}/replica-index"
LABEL_GENERATION = f"{LABEL_PREFIX}/restart-generation"
LABEL_PRIORITY = f"{LABEL_PREFIX}/priority"

# The replica the /scale subresource drives (kubectl scale, HPA), as in the seed.
SCALE_REPLICA = "trainer"

# A pod's hostname and subdomain must be DNS-1123 labels; a Service's name a DNS-1035 label.
DNS_1035_LABEL = r"[a-z]([-a-z0-9]*[a-z0-9])?"
DNS_1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_LABEL_MAX = 63

# Bounds. Besides catching typos they keep the CRD's CEL rules inside the apiserver's cost
# budget, which is estimated from the largest list, map and string the schema admits.
MAX_REPLICA_SPECS = 8
MAX_REPLICAS = 10_000
MAX_RULES = 16
# The most restarts a rule's restartLimit allows within restartWindowSeconds. Each restart in
# the window is kept, with its time (about 35 B), in the status and on the pods of the pass that
# made it: that is what keeps a window budget exact across crashes, and what this bounds (a
# pod's annotations cannot pass 256 KiB). A life budget keeps only a count: no such bound.
MAX_WINDOW_RESTARTS = 1_000
MAX_SECONDS = 2**31 - 1
MAX_EVENTS_LENGTH = 256
MAX_PLUGIN_ITEMS = 8
MAX_PLUGIN_ITEM_LENGTH = 253
MAX_NAME_LENGTH = DNS_LABEL_MAX  # the job name is its headless Service's name: a DNS-1035 label
MAX_REPLICA_NAME_LENGTH = DNS_LABEL_MAX
MAX_POD_NAME_LENGTH = DNS_LABEL_MAX  # pod names are the pods' hostnames in the headless Service
NAME_PART_LENGTH = 5  # the <5 chars> of <job>-<replica>-<5 chars>-<index> (aitj/core/naming.py)
# Status lists are bounded: the operator trims to these before writing, the CRD refuses longer.
MAX_STATUS_CONDITIONS = 64
MAX_SCALE_HISTORY = 64
MAX_RESTART_RECORDS = 64
# A message or status list names at most this many pods, indices or restarts, then says how
# many more: a job of 10,000 pods must not write a condition of 10,000 names (the status has to
# fit in etcd).
MAX_LISTED = 32

_DNS_1035 = re.compile(DNS_1035_LABEL)
_DNS_1123 = re.compile(DNS_1123_LABEL)


def is_dns1123_label(value: str) -> bool:
    """is_dns1123_label: at most DNS_LABEL_MAX characters of a-z, 0-9 and '-', alphanumeric at both ends."""
    return len(value) <= DNS_LABEL_MAX and _DNS_1123.fullmatch(value) is not None


def is_dns1035_label(value: str) -> bool:
    """is_dns1035_label is is_dns1123_label that also demands a leading letter."""
    return len(value) <= DNS_LABEL_MAX and _DNS_1035.fullmatch(value) is not None


def pod_name_length(job_name: str, replica: str, index: int) -> int:
    """pod_name_length is len(``<job>-<replica>-<5 chars>-<index>``) without building the name."""
    return len(job_name) + len(replica) + NAME_PART_LENGTH + len(str(index)) + 3
