#!/usr/bin/env python
"""aitj's elastic Horovod training script, at the path of Horovod's own example.

A small model on synthetic data, trained with Horovod's elastic API (``hvd.elastic.run``):
workers may join or leave while it runs; the state is committed every few steps and rolled
back to the last commit when a worker is lost. Every re-forming syncs the state from rank 0,
also one that only removed workers (``SyncedState``: horovod#3494). It is fast on CPU: the seed job's 1000 steps take
about a minute with three workers on two cores (``--step-seconds`` paces it so a run lasts long
enough to be disturbed). It accepts the options of Horovod's
pytorch_synthetic_benchmark_elastic.py that do not need a GPU or torchvision, and prints a line
every ``--log-every`` steps with the rank and the world size.
"""

import argparse
import socket
import time

import torch
import torch.nn.functional as F

import horovod.torch as hvd
from horovod.common.exceptions import HostsUpdatedInterrupt

parser = argparse.ArgumentParser(description="aitj elastic synthetic training (PyTorch, Horovod)")
parser.add_argument("--num-iters", type=int, default=1000, help="training steps in all")
parser.add_argument("--batch-size", type=int, default=32, help="samples per worker and step")
parser.add_argument("--features", type=int, default=32, help="inputs of the model")
parser.add_argument("--hidden", type=int, default=64, help="hidden units")
parser.add_argument("--lr", type=float, default=0.05, help="learning rate for one worker")
parser.add_argument("--batches-per-commit", type=int, default=10, help="steps between state commits")
parser.add_argument("--log-every", type=int, default=10, help="steps between progress lines")
parser.add_argument("--step-seconds", type=float, default=0.05, help="pause after each step")
parser.add_argument("--slow-every", type=int, default=0,
                    help="every this many steps, a slow one, as a long checkpoint is (0: never)")
parser.add_argument("--slow-seconds", type=float, default=0, help="how long a slow step lasts")
parser.add_argument("--seed", type=int, default=42, help="seed of the model and the data")
# Options of Horovod's example, accepted for compatibility.
parser.add_argument("--model", default="mlp", help="ignored: the model is a small MLP")
parser.add_argument("--num-warmup-batches", type=int, default=0, help="ignored")
parser.add_argument("--num-batches-per-iter", type=int, default=1, help="ignored")
parser.add_argument("--fp16-allreduce", action="store_true", help="compress gradients to fp16")
parser.add_argument("--no-cuda", action="store_true", help="ignored: this image is CPU only")
args = parser.parse_args()

hvd.init()
torch.set_num_threads(1)
torch.manual_seed(args.seed)

model = torch.nn.Sequential(
    torch.nn.Linear(args.features, args.hidden),
    torch.nn.ReLU(),
    torch.nn.Linear(args.hidden, 2),
)
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size())
compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
optimizer = hvd.DistributedOptimizer(
    optimizer, named_parameters=model.named_parameters(), compression=compression
)


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {socket.gethostname()} rank {hvd.rank()}/{hvd.size()}: {message}",
          flush=True)


def batch(step):
    """The same synthetic batch for a step and rank, whoever computes it: a separable task."""
    generator = torch.Generator().manual_seed(args.seed + step * 1000 + hvd.rank())
    x = torch.randn(args.batch_size, args.features, generator=generator)
    y = (x[:, : args.features // 2].sum(dim=1) > x[:, args.features // 2 :].sum(dim=1)).long()
    return x, y


@hvd.elastic.run
def train(state):
    while state.step < args.num_iters:
        x, y = batch(state.step)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        state.step += 1
        if state.step % args.log_every == 0 or state.step == args.num_iters:
            log(f"step {state.step}/{args.num_iters} loss {loss.item():.4f}")
        if state.step % args.batches_per_commit == 0:
            state.commit()
        if args.slow_every and state.step % args.slow_every == 0:
            time.sleep(args.slow_seconds)  # every worker, at the same step: no collective waits on it
        if args.step_seconds > 0:
            time.sleep(args.step_seconds)


def on_state_reset():
    for group in optimizer.param_groups:
        group["lr"] = args.lr * hvd.size()
    log(f"reset: world size now {hvd.size()}, resuming at step {state.step}")


class SyncedState(hvd.elastic.TorchState):
    """TorchState whose every re-forming syncs the state, on every rank.

    Horovod skips the sync on the ranks that stay when rank 0's notices at its commit were only
    removals. But the driver forms the new world from the host list as it reads it at the reset:
    a worker listed in between (a lost trainer's replacement, joining a few seconds after the
    loss) starts with a sync, a broadcast the others never join, and no collective completes
    again (horovod#3494, open). Syncing at every re-forming keeps all ranks in step; it costs
    one broadcast of the state when only workers left, which is cheap next to a lost ring.
    """

    def check_host_updates(self):
        try:
            super().check_host_updates()
        except HostsUpdatedInterrupt as interrupt:
            if interrupt.skip_sync:
                raise HostsUpdatedInterrupt(skip_sync=False) from interrupt
            raise


state = SyncedState(model, optimizer, step=0)
state.register_reset_callbacks([on_state_reset])
log(f"start: {args.num_iters} steps, batch {args.batch_size} per worker")
train(state)
log(f"done: {state.step} steps")
