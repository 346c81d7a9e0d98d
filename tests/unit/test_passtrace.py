"""passtrace: a pass's stamps start at its first kick, keep every kick's event, and say whether
it waited for its job's pace."""

from __future__ import annotations

from aitj.controller import passtrace
from aitj.controller.passtrace import Trace


def test_the_first_kick_dates_the_pass_and_every_kick_s_event_is_kept() -> None:
    t = Trace()
    passtrace.HANDING.read, passtrace.HANDING.drained = 10.0, 10.5
    t.kick(busy=True)
    passtrace.HANDING.read, passtrace.HANDING.drained = 20.0, 20.5
    t.kick(busy=False)
    passtrace.HANDING.read = passtrace.HANDING.drained = 0.0
    assert (t.read, t.drained, t.busy) == (10.0, 10.5, True)
    assert t.reads == [10.0, 20.0]
    assert t.kicked > 0 and t.start() is False and t.started >= t.kicked


def test_a_timer_s_kick_has_no_event_and_a_paced_pass_says_so() -> None:
    t = Trace()
    t.kick(busy=False)  # no batch being handed over: a timer's
    assert t.read == 0.0 and len(t.reads) == 1 and 0 < t.reads[0] <= t.kicked
    t.paced = True
    assert t.start() is True


def test_a_pass_begun_by_no_kick_of_its_own_is_dated_from_its_start() -> None:
    t = Trace()
    t.start()
    assert t.kicked and t.started >= t.kicked and t.reads == []


def test_the_steps_of_a_pass_thread_are_kept_only_once_it_begins() -> None:
    passtrace._STEPS.__dict__.clear()  # no pass begun on this thread
    passtrace.step("creates", passtrace.now())  # nothing to keep it in: dropped
    steps = passtrace.begin()
    passtrace.step("status", passtrace.now() - 0.002)
    assert len(steps) == 1 and steps[0].startswith("status:")
