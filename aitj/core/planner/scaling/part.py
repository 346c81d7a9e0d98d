"""The scale operations' part of a pass: their Events, the rollback's spec patch, the status
fields they live in (``write_status``) and the wake-up when one falls due.

Pure. Not imported by the package: aitj.core.planner.part, which this needs, needs the
package's ``Scaling``.
"""

from __future__ import annotations

from aitj.core.planner.part import Context, Part, steps
from aitj.core.planner.scaling.messages import events, wake, write_status


def part(ctx: Context) -> Part:
    """part: what the scale operations settled in this pass (``ctx.scale``) write and say."""
    return Part(
        steps(events=events(ctx.job, ctx.scale), spec_replicas=ctx.scale.patches),
        edit=lambda status: write_status(status, ctx.scale, ctx.now),
        wake=tuple(wake(ctx.scale, ctx.now)),
    )
