# Runs inside the image's root filesystem (chroot, as root). src/ holds this repository's
# requirements.lock, pyproject.toml, a stub README.md and aitj/. PIP_CERT names the build machine's CA
# bundle, copied in for the build only.
set -eu
cd /tmp/aitj-build
python3 -m venv /opt/aitj
/opt/aitj/bin/pip install --no-cache-dir --quiet --require-hashes --no-deps -r src/requirements.lock
/opt/aitj/bin/pip install --no-cache-dir --quiet --no-deps ./src
/opt/aitj/bin/pip uninstall --yes --quiet pip
/opt/aitj/bin/python -m compileall -q /opt/aitj
/opt/aitj/bin/aitj barrier --help > /dev/null
