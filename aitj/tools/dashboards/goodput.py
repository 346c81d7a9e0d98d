"""The goodput row of the per-job dashboard (issue 28; docs/metrics.md, "Goodput"): the share of
the job's time spent training, now and over the range shown, and where the rest went.

Apart from ``boards`` so that module stays readable; ``boards`` places the row. The range's
goodput is read from the two counters (training and badput seconds), so it covers exactly the
range shown, where the ratio gauge covers the job's whole life.
"""

from __future__ import annotations

from aitj.tools.dashboards.spec import Panel, Query, Row, Viz

# Below this share of its time training, a job is drawn red: a tenth of its time lost.
GOODPUT_RED = 0.9


def goodput_row(job: str) -> Row:
    """goodput_row: the row of the job selected by the matchers ``job``."""
    training = f"sum(increase(aitj_job_training_seconds_total{{{job}}}[$__range]))"
    badput = f"sum(increase(aitj_job_badput_seconds_total{{{job}}}[$__range]))"
    return Row(
        "Goodput",
        (
            Panel(
                "Goodput",
                Viz.STAT,
                (
                    Query(f"max(aitj_job_goodput_ratio{{{job}}})", "since it first ran"),
                    Query(f"{training} / ({training} + {badput})", "in range"),
                ),
                "The share of the job's time spent training: Running with no fault waiting for the "
                "operator. Not seen by the operator: work redone since the last checkpoint, the "
                "training's own start-up after its pods run (docs/metrics.md, Goodput).",
                unit="percentunit",
                width=8,
                topic="goodput",
            ),
            Panel(
                "Time lost by cause",
                Viz.TIMESERIES,
                (
                    Query(
                        "sum by (cause) "
                        f"(increase(aitj_job_badput_seconds_total{{{job}}}[$__rate_interval]))",
                        "{{cause}}",
                    ),
                ),
                "Seconds not training: fault (to the operator's decision), hang (from the last "
                "progress), recovery (Restarting), scaling, starting (after a resume).",
                unit="s",
                width=16,
                topic="badput",
            ),
        ),
    )
