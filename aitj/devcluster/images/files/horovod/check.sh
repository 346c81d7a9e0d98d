# Runs inside the finished root filesystem: the build tools are gone, Horovod must still load.
set -eu
export PATH=/opt/horovod/bin:$PATH
horovodrun --check-build
python -c "import torch, horovod, horovod.torch; print('torch', torch.__version__, 'horovod', horovod.__version__)"
/usr/sbin/sshd -t
test -x /horovod/examples/elastic/pytorch/pytorch_synthetic_benchmark_elastic.py
