# Runs inside the finished root filesystem: both worlds must load.
set -eu
python3 -c "import torch, torch.distributed as d, mpi4py; assert d.is_gloo_available(); print('torch', torch.__version__, 'mpi4py', mpi4py.__version__)"
python3 -m torch.distributed.run --help > /dev/null
python3 -c "from torch.distributed.elastic.multiprocessing.api import Std; assert Std.from_str('0') is Std.NONE and Std.from_str('3') is Std.ALL"
mpiexec --version
/usr/sbin/sshd -t
test -x /opt/aitj/train.py && test -x /opt/aitj/torchrun_launcher.py
