# Runs inside the image's root filesystem (chroot, as root) with the build packages installed;
# they are purged afterwards. PIP_CERT names the build machine's CA bundle, copied in for the
# build only (pip cannot reach PyPI through this machine's proxy without it).
set -eu
cd /tmp/aitj-build

# Horovod from PyPI against Debian's CPU torch 1.13.1: a venv that sees the system's packages.
python3 -m venv --system-site-packages /opt/horovod
/opt/horovod/bin/pip install --no-cache-dir --quiet "wheel==0.45.1"
HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1 HOROVOD_WITHOUT_TENSORFLOW=1 \
HOROVOD_WITHOUT_MXNET=1 MAKEFLAGS=-j2 \
  /opt/horovod/bin/pip install --no-cache-dir --no-build-isolation "horovod==0.28.1"
/opt/horovod/bin/pip uninstall --yes --quiet wheel

# The seed's command runs this path.
install -D -m 0755 pytorch_synthetic_benchmark_elastic.py \
  /horovod/examples/elastic/pytorch/pytorch_synthetic_benchmark_elastic.py

# sshd: root logs in with a key only; the client trusts any host key (pods come and go).
install -D -m 0644 sshd_config /etc/ssh/sshd_config.d/aitj.conf
install -D -m 0644 ssh_config /etc/ssh/ssh_config.d/aitj.conf
rm -f /etc/ssh/ssh_host_*
ssh-keygen -A
mkdir -p /run/sshd /root/.ssh
chmod 0755 /run/sshd
chmod 0700 /root/.ssh
