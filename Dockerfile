# The aitj operator image. `make image` builds it (needs Docker or another Dockerfile builder).
#
# Two stages: the build stage installs the locked dependencies (requirements.lock: every package
# pinned and hash-checked, no resolution) and aitj into a virtualenv; the final stage is the same
# slim Python base with only that virtualenv copied in: no compiler, no pip, no build files.
# It runs as a non-root user, with no writable files of its own (the Deployment mounts the root
# filesystem read-only).
#
# The base is pinned by tag. Pin it by digest where a registry is reachable:
#   docker buildx imagetools inspect python:3.11-slim-bookworm   # then PYTHON_IMAGE=python:...@sha256:...
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/aitj
COPY requirements.lock /src/
RUN /opt/aitj/bin/pip install --require-hashes --no-deps -r /src/requirements.lock
COPY pyproject.toml README.md /src/
COPY aitj /src/aitj
RUN /opt/aitj/bin/pip install --no-deps /src \
 && /opt/aitj/bin/pip uninstall --yes pip \
 && /opt/aitj/bin/python -m compileall -q /opt/aitj

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="aitj" \
      org.opencontainers.image.description="Kubernetes operator that keeps distributed training jobs (AITrainingJob) alive" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/aitj /opt/aitj
ENV PATH=/opt/aitj/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# 65532: the conventional "nonroot" uid; no home directory or shell login needed. It has a
# passwd entry: kopf names the operator after getpass.getuser(), which fails for a uid without
# one (found running this image on real nodes: the operator crashed at start).
RUN echo 'aitj:x:65532:65532:aitj operator:/nonexistent:/usr/sbin/nologin' >> /etc/passwd \
 && echo 'aitj:x:65532:' >> /etc/group
USER 65532:65532
# 8080 metrics (--metrics-port), 8081 kopf's health endpoint (--liveness).
EXPOSE 8080 8081
ENTRYPOINT ["aitj"]
CMD ["run", "--metrics-address=0.0.0.0", "--liveness=http://0.0.0.0:8081/healthz", "--json-logs"]
