# The aitj operator image. `make image` builds it (needs Docker or another Dockerfile builder).
#
# Two stages: the build stage installs the locked dependencies (requirements.lock: every package
# pinned and hash-checked, no resolution) and aitj into a virtualenv; the final stage is the same
# slim Python base with only that virtualenv copied in: no compiler, no pip, no build files.
# It runs as a non-root user, with no writable files of its own (the Deployment mounts the root
# filesystem read-only).
#
# The base: pin it by digest for a release, where a registry is reachable (this repository is
# built where none is, so the default below is a tag; tests/unit/test_manifests.py says why):
#   docker buildx imagetools inspect python:3.11-slim-bookworm
#   make image IMAGE=REGISTRY/aitj:VERSION DOCKER_BUILD_ARGS=--build-arg=PYTHON_IMAGE=python@sha256:...
# The local cluster's build (`aitj dev cluster build`) passes its own base, a Debian root filesystem
# made by mmdebstrap, by the digest of that build (aitj/devcluster/images/dockerfile.py).
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
#
# The base's own pip goes too (the module, its scripts, and the wheels ensurepip and Debian's
# venv would install it from): nothing in the image installs packages at run time, and a pip
# left there is one more tool for whoever gets a shell in it. The build fails if one remains.
RUN echo 'aitj:x:65532:65532:aitj operator:/nonexistent:/usr/sbin/nologin' >> /etc/passwd \
 && echo 'aitj:x:65532:' >> /etc/group \
 && (python -m pip uninstall --yes pip >/dev/null 2>&1 || true) \
 && rm -rf /usr/local/bin/pip /usr/local/bin/pip3* /usr/bin/pip /usr/bin/pip3* /usr/lib/python3/dist-packages/pip \
      /usr/share/python-wheels/pip-*.whl "$(python -c 'import ensurepip, os; print(os.path.dirname(ensurepip.__file__))')"/_bundled/pip-*.whl \
 && ! python -c 'import pip' 2>/dev/null \
 && ! /opt/aitj/bin/python -c 'import pip' 2>/dev/null \
 && for f in /usr/share/python-wheels/pip-*.whl /usr/local/lib/python3*/ensurepip/_bundled/pip-*.whl \
      /usr/lib/python3*/ensurepip/_bundled/pip-*.whl; do [ ! -e "$f" ] || { echo "pip left: $f"; exit 1; }; done
USER 65532:65532
# 8443 metrics over HTTPS (--metrics-port, --metrics-secure), 8081 kopf's health endpoint (--liveness).
EXPOSE 8443 8081
ENTRYPOINT ["aitj"]
CMD ["run", "--metrics-address=0.0.0.0", "--liveness=http://0.0.0.0:8081/healthz", "--json-logs"]
