#!/usr/bin/env python3
"""aitj's training script for MPI (mpiexec) and torchrun: small, elastic by restarts, and loud.

A small MLP trained on CPU on synthetic data it makes itself, data-parallel: every step each
rank computes the gradient of its own batch and the ranks average the gradients. It runs in
either world:

- **MPI**: started by ``mpiexec`` (``OMPI_COMM_WORLD_SIZE`` is set): the gradients are averaged
  with mpi4py's Allreduce;
- **torchrun**: started by torchrun's agent (``TORCHELASTIC_RUN_ID`` is set): a gloo process
  group (``init_process_group`` from the agent's ``MASTER_ADDR``/``RANK``/``WORLD_SIZE``).

Neither world survives a lost rank: the launcher (MPI's loop, torchrun's agent) starts the
script again with the ranks it has, and the script resumes from the last checkpoint. Every rank
writes the whole state to its own disk every ``--checkpoint-every`` steps; at start the ranks
agree on the highest step any of them holds (all-reduce MAX) and the lowest rank holding it
sends its state to the others (a broadcast). A replaced pod, whose disk is new, gets the state
from a rank that kept its own: nothing is written outside the ranks' pods. Only when every rank
is new (none holds a checkpoint) does training start again from step 0.

Lines, one per ``--log-every`` steps and one per (re)start, read by aitj.tools.trainbench::

    [12:00:01] <host> rank <r>/<size>: reset: world size now <size>, resuming at step <s>
    [12:00:01] <host> rank <r>/<size>: step <s>/<total> loss <x> samples/s <n> checksum <c>

``checksum`` is the sum of the model's parameters: the same at the same step whatever restarts
happened in between, at the same width, so a restart from scratch shows.

A checkpoint on demand: once the file ``--checkpoint-now`` exists on any rank, every rank saves
after the next step (the request rides on the gradients' all-reduce, one number more), that rank
removes the file, and each prints ``checkpoint asked for: saved at step <s>``. A command that
creates the file and waits for it to go is a checkpoint hook before a drain (docs/semantics.md,
section 26).

An end on demand: once the file ``--finish-now`` exists on any rank, every rank saves after the
next step and ends there as it would at ``--steps`` (exit 0), printing ``finish asked for: done
at step <s>``. The request rides on the same all-reduce. The file stays, so ranks started again
by a re-forming in between end too. A test ends a long training this way once its faults are
over, however long they took.
"""

import argparse
import datetime
import io
import os
import socket
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

parser = argparse.ArgumentParser(description="aitj elastic synthetic training (PyTorch, MPI or torchrun)")
parser.add_argument("--steps", type=int, default=1000, help="training steps in all")
parser.add_argument("--batch-size", type=int, default=32, help="samples per rank and step")
parser.add_argument("--features", type=int, default=32, help="inputs of the model")
parser.add_argument("--hidden", type=int, default=64, help="hidden units")
parser.add_argument("--lr", type=float, default=0.05, help="learning rate")
parser.add_argument("--checkpoint-every", type=int, default=20, help="steps between checkpoints")
parser.add_argument("--checkpoint-dir", default="/tmp/aitj-train", help="each rank's own checkpoint")
parser.add_argument("--checkpoint-now", default="/tmp/aitj-train/checkpoint-now",
                    help="a file whose existence on any rank makes every rank save after the next step")
parser.add_argument("--finish-now", default="/tmp/aitj-train/finish-now",
                    help="a file whose existence on any rank makes every rank save and end after the next step")
parser.add_argument("--log-every", type=int, default=10, help="steps between progress lines")
parser.add_argument("--step-seconds", type=float, default=0.05, help="pause after each step")
parser.add_argument("--slow-every", type=int, default=0,
                    help="every this many steps, a slow one, as a long checkpoint is (0: never)")
parser.add_argument("--slow-seconds", type=float, default=0, help="how long a slow step lasts")
parser.add_argument("--timeout", type=float, default=30, help="torchrun: seconds a collective waits")
parser.add_argument("--seed", type=int, default=42, help="seed of the model and the data")
args = parser.parse_args()


class MpiWorld:
    """The ranks mpiexec started, through mpi4py. An exception aborts the whole world: mpi4py
    would finalize MPI at exit instead, and the other ranks would wait on this one for ever."""

    def __init__(self):
        from mpi4py import MPI

        self.mpi, self.comm = MPI, MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        sys.excepthook = self.abort

    def abort(self, kind, value, trace):
        sys.__excepthook__(kind, value, trace)
        sys.stderr.flush()
        self.comm.Abort(1)

    def average(self, flat):
        self.comm.Allreduce(self.mpi.IN_PLACE, flat.numpy(), op=self.mpi.SUM)
        flat /= self.size

    def max(self, value):
        return self.comm.allreduce(value, op=self.mpi.MAX)

    def broadcast(self, data, root):
        return self.comm.bcast(data, root=root)


class TorchWorld:
    """The ranks torchrun's agents started, through a gloo process group."""

    def __init__(self):
        import torch.distributed as dist

        self.dist = dist
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
        self.rank, self.size = dist.get_rank(), dist.get_world_size()

    def average(self, flat):
        self.dist.all_reduce(flat)
        flat /= self.size

    def max(self, value):
        t = torch.tensor([value], dtype=torch.int64)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        return int(t.item())

    def broadcast(self, data, root):
        box = [data]
        self.dist.broadcast_object_list(box, src=root)
        return box[0]


world = MpiWorld() if "OMPI_COMM_WORLD_SIZE" in os.environ else TorchWorld()
torch.set_num_threads(1)
torch.manual_seed(args.seed)
model = torch.nn.Sequential(
    torch.nn.Linear(args.features, args.hidden),
    torch.nn.ReLU(),
    torch.nn.Linear(args.hidden, 2),
)
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
checkpoint = Path(args.checkpoint_dir) / "checkpoint.pt"
checkpoint_now = Path(args.checkpoint_now)
finish_now = Path(args.finish_now)


def log(message):
    # One write per line: under PYTHONUNBUFFERED print() writes the text and its newline apart,
    # and the lines of ranks that share a stream (mpiexec's, an ssh session's) would interleave.
    sys.stdout.write(f"[{time.strftime('%H:%M:%S')}] {socket.gethostname()} rank {world.rank}/{world.size}: "
                     f"{message}\n")
    sys.stdout.flush()


def batch(step):
    """The same synthetic batch for a step and rank, whoever computes it: a separable task."""
    generator = torch.Generator().manual_seed(args.seed + step * 1000 + world.rank)
    x = torch.randn(args.batch_size, args.features, generator=generator)
    y = (x[:, : args.features // 2].sum(dim=1) > x[:, args.features // 2 :].sum(dim=1)).long()
    return x, y


def save(step):
    """save writes this rank's checkpoint, whole or not at all (a rename)."""
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    partial = checkpoint.with_suffix(f".{os.getpid()}.partial")
    torch.save({"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict()}, partial)
    partial.replace(checkpoint)


def resume():
    """resume: the step to start at, with the state of the highest checkpoint any rank holds."""
    held = torch.load(checkpoint) if checkpoint.exists() else None
    step = world.max(held["step"] if held else 0)
    if step == 0:
        return 0
    # The lowest rank holding that step: the max of -rank over the holders.
    root = -world.max(-world.rank if held and held["step"] == step else -world.size)
    data = None
    if world.rank == root:
        buffer = io.BytesIO()
        torch.save(held, buffer)
        data = buffer.getvalue()
    state = torch.load(io.BytesIO(world.broadcast(data, root)))
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return step


def step_once(step, asking, ending):
    """step_once: one step; whether any rank was ``asking`` for a checkpoint and whether any was
    ``ending`` the training (the last two numbers of the all-reduce, after the gradients)."""
    x, y = batch(step)
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    grads = [p.grad for p in model.parameters()]
    flags = torch.tensor([1.0 if asking else 0.0, 1.0 if ending else 0.0])
    flat = torch.cat([g.reshape(-1) for g in grads] + [flags])
    world.average(flat)
    offset = 0
    for g in grads:
        g.copy_(flat[offset : offset + g.numel()].view_as(g))
        offset += g.numel()
    optimizer.step()
    return loss.item(), bool(flat[-2] > 0), bool(flat[-1] > 0)


def main():
    step = resume()
    log(f"reset: world size now {world.size}, resuming at step {step}")
    since, since_step = time.monotonic(), step
    ended = False
    while step < args.steps and not ended:
        asking = checkpoint_now.exists()
        loss, asked, ended = step_once(step, asking, finish_now.exists())
        step += 1
        if asked or ended or step % args.checkpoint_every == 0 or step == args.steps:
            save(step)
        if asked:
            log(f"checkpoint asked for: saved at step {step}")
            if asking:
                checkpoint_now.unlink(missing_ok=True)
        if ended:
            log(f"finish asked for: done at step {step}")
        if step % args.log_every == 0 or step == args.steps or ended:
            now = time.monotonic()
            rate = (step - since_step) * args.batch_size * world.size / max(now - since, 1e-6)
            checksum = sum(float(p.detach().sum()) for p in model.parameters())
            log(f"step {step}/{args.steps} loss {loss:.4f} samples/s {rate:.0f} checksum {checksum:.6f}")
            since, since_step = now, step
        if args.slow_every and step % args.slow_every == 0:
            time.sleep(args.slow_seconds)  # every rank, at the same step: no collective waits on it
        if args.step_seconds > 0:
            time.sleep(args.step_seconds)
    log(f"done: {step} steps")


main()
