# Runs inside the image's root filesystem (chroot, as root); no build packages: Debian's
# torch 1.13.1 (gloo, torchrun), OpenMPI 4.1 and mpi4py are all packaged.
set -eu
cd /tmp/aitj-build

# torchrun 1.13 under Python 3.11: Std.from_str("0"), the default of --redirects and --tee,
# gives None (3.11 no longer iterates a Flag's zero member), and every agent fails at its
# first start. Later torch releases fixed it; here the one function, checked in check.sh.
python3 fix_torchrun_std.py /usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/api.py

install -D -m 0755 train.py /opt/aitj/train.py
install -D -m 0755 torchrun_launcher.py /opt/aitj/torchrun_launcher.py

# sshd: root logs in with a key only; the client trusts any host key (pods come and go).
install -D -m 0644 sshd_config /etc/ssh/sshd_config.d/aitj.conf
install -D -m 0644 ssh_config /etc/ssh/ssh_config.d/aitj.conf
rm -f /etc/ssh/ssh_host_*
ssh-keygen -A
mkdir -p /run/sshd /root/.ssh
chmod 0755 /run/sshd
chmod 0700 /root/.ssh
