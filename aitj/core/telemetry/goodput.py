"""The goodput a scrape reports of a job: ``aitj.core.planner.goodput.account`` of its status,
made safe to export as counters.

Pure. The account is read afresh at every scrape from the status (its conditions and restart
entries), so every operator process reports the same. One thing can make it go back: a fault
the operator learns of after the fact (its ``failureTime`` earlier than the scrape that counted
those seconds as training) moves seconds from training to ``fault``. A counter must not go
back, so ``held`` keeps each figure at least where it was last exported: training holds still
until the job has trained those seconds again (its next seconds Running), while the fault's
seconds count at once. The same holds when the progress signal moves a Running spell's head
to a badput cause after it was exported as training (its first line not yet read). The
other way round (seconds exported as badput while no line was read, then training once the
line's earlier timestamp is read), badput holds and training waits until the total of the
counters is the time accounted: no second is exported twice. The ratio is the account's own.
"""

from __future__ import annotations

from aitj.core.planner.goodput import Account, BadputCause, account

__all__ = ["Account", "BadputCause", "account", "held"]


def held(last: Account | None, now: Account) -> Account:
    """held: ``now`` with no figure below ``last``'s (None: nothing exported yet)."""
    if last is None:
        return now
    bad = {c: max(now.badput.get(c, 0.0), last.badput.get(c, 0.0)) for c in BadputCause}
    return Account(max(now.total - sum(bad.values()), last.training), bad)
