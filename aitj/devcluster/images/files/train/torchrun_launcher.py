#!/usr/bin/env python3
"""aitj's torchrun launcher: hosts the c10d rendezvous store and runs torchrun on every listed
trainer over ssh, as horovodrun runs its workers.

    torchrun_launcher.py [--port 29400] [--hosts /etc/edl/hosts] -- <command run on each trainer>

- **The store**: a TCPStore server on ``--port``, in this process, for as long as the launcher
  runs. torchrun's c10d rendezvous backend keeps the rendezvous state in it; a trainer's loss
  (its agent with it) never loses the rendezvous, since no trainer hosts it. The command should
  point ``--rdzv-endpoint`` here and say ``is_host=false`` in ``--rdzv-conf``.
- **The trainers**: every ``--poll`` seconds the launcher reads Horovod's host file (plugin
  discovery; the operator nudges the launcher's kubelet, so a change shows within about a
  second) and runs ``ssh <host> <command>`` for each listed host with no session yet, and ends
  the session (and the agent) of a host no longer listed. New agents join the rendezvous; torchrun's agents
  then restart their workers with the new membership (train.py resumes from its checkpoint).
- **The end**: when a session exits 0 (its agent's workers finished), the others get
  ``--finish-seconds`` to finish too, and the launcher exits 0. A session that fails while its
  host is listed is started again after ``--retry-seconds`` (a new pod's name may not resolve
  yet, or its sshd may not listen yet).

- **A trainer gone is forgotten**: torch 1.13 keeps a member that left without a word
  (a force-deleted pod, or an agent ended by a signal) in a completed rendezvous round until its
  heartbeat is 15 s old (5 s x 3, not settable there), and the others' next round waits for
  that. The launcher knows sooner: when a host leaves the list, or its session ends (its agent
  killed inside a pod that runs on: the next agent there registers anew, and the others waited
  15 s for the dead one, 17 to 18 s in all before training ran again), it removes that host's
  agents from the rendezvous state in its store (at once, or once the replacement waits: below),
  as torch's own sanitizer would 15 s later, with the same compare-and-set the agents use. The
  state is torch 1.13's (``_RendezvousState``, pickled and base64-encoded at
  ``torch.rendezvous.<rdzv_id>``): this part is for this image's torch, and does nothing if it
  finds anything else.
- **A lost agent's round is kept for its replacement**: torch's agents re-form a round without
  the lost agent, then again with its replacement, each round starting every worker anew (torch
  imported, the checkpoint read) and each taking the agents' one-second polls and
  ``last_call_timeout``: a lost trainer cost two re-formings. While fewer agents wait for the
  next round than the job wants (``--wanted``: the file the operator writes beside the host list,
  the workers' ``replicas``), the launcher keeps the lost agent in its completed round, so the
  survivors wait rather than re-form; once every agent wanted waits (the replacement's too) it
  forgets the lost one and closes the next round with all of them at once, ranked as torch ranks
  (the sorted members). It waits ``--hold-seconds`` at most (a replacement slow to come, or none:
  the survivors then re-form as before); a scale-in, whose listed hosts are all it wants, is not
  held, and neither is an agent lost in a round not yet complete.
- **A round closes once everyone is in**: for the same reason, once an agent of each listed host
  with a session has joined an open round, the launcher marks it complete rather than let the
  agents' last call and polls do it a second or two later; a host whose session has not started,
  or whose agent has not joined yet, leaves the round to torch's last call, as before.

Everything the sessions print reaches the launcher's own output, each line as it comes.
"""

import argparse
import base64
import datetime
import pickle
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--port", type=int, default=29400, help="the rendezvous store's port")
parser.add_argument("--hosts", default="/etc/edl/hosts", help="the trainers, one host[:slots] a line")
parser.add_argument("--poll", type=float, default=0.2, help="seconds between reads of --hosts")
parser.add_argument("--retry-seconds", type=float, default=1.0, help="before a failed session is run again")
parser.add_argument("--finish-seconds", type=float, default=20.0, help="for the others, once one finished")
parser.add_argument("--wanted", default="/etc/edl/wanted", help="how many trainers the job asks for")
parser.add_argument("--hold-seconds", type=float, default=10.0,
                    help="at most, a gone agent is kept in its round while its replacement comes")
parser.add_argument("command", nargs=argparse.REMAINDER, help="run on each trainer over ssh, after --")


def say(message):
    sys.stdout.write(f"[{time.strftime('%H:%M:%S')}] launcher: {message}\n")  # one write, one line
    sys.stdout.flush()


def listed():
    try:
        text = Path(args.hosts).read_text()
    except OSError:
        return []
    return [line.split(":")[0] for line in text.split() if line]


def run():
    sessions, failed_at, known, held = {}, {}, set(), {}
    while True:
        hosts = listed()
        lose(known - set(hosts), held)
        known &= set(hosts)
        for host, proc in list(sessions.items()):
            code = proc.poll()
            if code == 0:
                return finish(sessions, host)
            if code is not None:
                say(f"{host}: session ended with {code}")
                del sessions[host]
                failed_at[host] = time.monotonic()
                lose({host}, held)  # its agent is gone; the next session's registers anew
            elif host not in hosts:
                say(f"{host}: no longer listed, session ended")
                proc.terminate()
                del sessions[host]
                stop(host)
        for host in hosts:
            if host not in sessions and time.monotonic() - failed_at.get(host, 0) >= args.retry_seconds:
                say(f"{host}: session started")
                sessions[host] = subprocess.Popen(["ssh", host, *command], stdin=subprocess.DEVNULL)
                known.add(host)
        if held:
            update(lambda state: settle(state, held, wanted(len(sessions)), time.monotonic()))
        update(lambda state: close_when_all_in(state, set(sessions)))
        time.sleep(args.poll)


def wanted(default):
    """wanted: how many trainers the job asks for (``--wanted``, which the operator writes beside
    the host list), or ``default`` where there is no such file."""
    try:
        return int(Path(args.wanted).read_text())
    except (OSError, ValueError):
        return default


def update(change):
    """update applies ``change`` (state -> a message, or None for no change) to the rendezvous
    state in the store with the compare-and-set the agents use, again on a conflict with an
    agent's own write; a state it does not understand is left to torch."""
    if RDZV_KEY is None:
        return
    for _ in range(20):
        token = STORE.get(RDZV_KEY)
        if token == NULL_STATE:
            return
        try:
            state = pickle.loads(base64.b64decode(token))
            message = change(state)
        except Exception as error:  # not the state this was written for
            say(f"rendezvous state not understood, left alone: {error!r}")
            return
        if message is None:
            return
        desired = base64.b64encode(pickle.dumps(state))
        if STORE.compare_set(RDZV_KEY, token, desired) == desired:
            say(f"rendezvous: {message}")
            return


def lose(hosts, held):
    """lose notes the agents of ``hosts`` as gone (``held``: agent -> when), for settle."""
    if not hosts:
        return
    names = {short(host) for host in hosts}

    def note(state):
        for node in members(state):
            if short(node.fqdn) in names:
                held.setdefault(node, time.monotonic())

    update(note)


def members(state):
    """members: every agent the state names."""
    return {*state.participants, *state.wait_list, *state.last_heartbeats}


def settle(state, held, want, now):
    """settle forgets the gone agents in ``held`` (agent -> when it went) once nothing is
    gained by keeping them (the docstring above says why and when), and closes the next round
    at once when every agent wanted waits for it; a message, or None while it holds them."""
    for node in [node for node in held if node not in members(state)]:
        del held[node]  # forgotten already (or by torch's sanitizer): a retry may see this too
    if not held:
        return None
    gone = set(held)
    waiting = state.wait_list - gone
    blocking = state.complete and any(node in state.participants for node in gone)
    all_waiting = set(state.participants) <= gone and len(waiting) >= max(want, MIN_NODES, 1)
    if blocking and not all_waiting and now - min(held.values()) < args.hold_seconds:
        return None
    forget(state, gone)
    message = f"forgot {', '.join(sorted(map(repr, gone)))}"
    fits = MAX_NODES is None or len(waiting) <= MAX_NODES
    if all_waiting and fits and not state.complete and not state.participants:
        state.participants.update(dict.fromkeys(waiting, 0))
        state.wait_list -= waiting
        close_round(state)
        message += f"; round {state.round} closed with the {len(waiting)} waiting"
    return message


def forget(state, gone):
    """forget removes the agents ``gone`` from the state, as torch's sanitizer does once their
    heartbeats have expired."""
    for node in gone:
        state.participants.pop(node, None)
        state.wait_list.discard(node)
        state.last_heartbeats.pop(node, None)
    # What torch's _remove_participant_epilogue does when a member leaves.
    if state.complete and not state.participants:
        state.complete = False
        state.round += 1
    elif not state.complete and not state.participants:
        state.deadline = None


def short(name):
    """short: the first label of a host or agent name, the pod's name."""
    return name.split(".")[0]


def all_in(state, hosts, min_nodes):
    """all_in: whether ``state`` is an open round that every host of ``hosts`` has an agent in
    (and at least ``min_nodes`` members), so waiting out the last call can only delay it."""
    if state.closed or state.complete or len(state.participants) < max(min_nodes, 1):
        return False
    joined = {short(node.fqdn) for node in state.participants}
    return {short(host) for host in hosts} <= joined


def close_round(state):
    """close_round marks ``state``'s round complete as torch's _mark_rendezvous_complete does:
    the members ranked in sorted order, no deadline."""
    state.complete = True
    state.deadline = None
    for rank, node in enumerate(sorted(state.participants)):
        state.participants[node] = rank


def close_when_all_in(state, hosts):
    """close_when_all_in closes the open round once every host in ``hosts`` (those with a
    session) has an agent in it (the docstring above says why)."""
    if not hosts or not all_in(state, hosts, MIN_NODES):
        return None
    close_round(state)
    return f"round {state.round} closed with all {len(state.participants)} in"


def stop(host):
    """stop ends torchrun's agent on a host no longer listed, in the background: ending the ssh
    session alone would leave it running (no terminal, no hangup), and a scale-in's pod may live
    a little longer. SIGTERM: an agent ended by a signal leaves the rendezvous open for the
    others (torch.distributed.launcher.api). A host force-deleted does not answer: no matter."""
    subprocess.Popen(["ssh", "-o", "ConnectTimeout=2", host, "pkill", "-TERM", "-f", "torch.distributed.run"],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def finish(sessions, first):
    say(f"{first}: finished")
    deadline = time.monotonic() + args.finish_seconds
    for host, proc in sessions.items():
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            say(f"{host}: still running, ended")
            proc.terminate()
    return 0


def option(pattern, default=None):
    """option: the first group of the first word of the command that matches ``pattern``."""
    return next((m[1] for m in (re.fullmatch(pattern, a) for a in command) if m), default)


if __name__ == "__main__":  # a module too, for the unit tests of its pure parts
    from torch.distributed import TCPStore

    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run on each trainer after --")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # Kept for the process's life: the store's server runs as long as this object lives.
    STORE = TCPStore(socket.gethostname(), args.port, is_master=True, wait_for_workers=False,
                     timeout=datetime.timedelta(seconds=60))
    say(f"rendezvous store on port {args.port}")
    # The rendezvous' key, from the command's --rdzv_id (or --rdzv-id); c10d's backend starts it
    # with this null value, so a get never waits for a key that is not there yet.
    NULL_STATE = b"Y2FuaW1hZGFt"
    _ID = option(r"--rdzv[_-]id=(.+)")
    RDZV_KEY = None if _ID is None else f"torch.rendezvous.{_ID}"
    # The fewest and most members of a round, from the command's --nnodes=MIN:MAX (or MIN).
    MIN_NODES = int(option(r"--nnodes=([0-9]+)(?::[0-9]+)?", "1"))
    _MAX = option(r"--nnodes=[0-9]+:([0-9]+)")
    MAX_NODES = None if _MAX is None else int(_MAX)
    if RDZV_KEY is not None:
        STORE.compare_set(RDZV_KEY, "", NULL_STATE.decode())
    sys.exit(run())
