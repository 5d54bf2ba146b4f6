"""The views every database has: the usual questions, answered in SQL that users can read and adapt
(docs/sql.md lists them with this text; `.schema NAME` in `trntui sql` shows the columns)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class View:
    sql: str
    needs: tuple[str, ...]
    doc: str


VIEWS: dict[str, View] = {
    "top_kernels_per_step": View(
        """
SELECT run, step, name, count(*) AS calls, sum(dur_us) AS total_us, avg(dur_us) AS mean_us, max(dur_us) AS max_us,
       row_number() OVER (PARTITION BY run, step ORDER BY sum(dur_ns) DESC, name) AS rank
FROM kernels
WHERE step IS NOT NULL
GROUP BY run, step, name
QUALIFY rank <= 10
ORDER BY run, step, rank
""",
        ("kernels",),
        "The ten hardware executions (kernels, memcpy, nc_exec_running) with the most time in each "
        "ProfilerStep#N (a device row counts for the step of the op that launched it).",
    ),
    "launch_latency": View(
        """
SELECT run, op, runtime_call, count(*) AS launches,
       avg(launch_latency_ns) / 1000.0 AS mean_us, median(launch_latency_ns) / 1000.0 AS median_us,
       max(launch_latency_ns) / 1000.0 AS max_us
FROM kernels
WHERE runtime_id IS NOT NULL
GROUP BY run, op, runtime_call
ORDER BY run, mean_us DESC
""",
        ("kernels",),
        "Per op and runtime call: from the runtime call's start (cudaLaunchKernel, nrta_execute_schedule) to "
        "the device execution's start, in µs.",
    ),
    "idle_gaps": View(
        """
SELECT run, lane, label, after_ns AS start_ns, start_ns AS end_ns, start_ns - after_ns AS gap_ns
FROM (
  SELECT e.run, e.lane, l.label, e.start_ns,
         max(e.end_ns) OVER (PARTITION BY e.run, e.lane ORDER BY e.start_ns, e.id
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS after_ns
  FROM events e JOIN lanes l ON l.lane = e.lane AND l.run = e.run
  WHERE e.tier = 'hardware'
)
WHERE start_ns > after_ns
ORDER BY gap_ns DESC, run, lane, start_ns
""",
        ("events", "lanes"),
        "Every idle interval on a hardware lane: from the end of everything before an execution to its start.",
    ),
    "time_per_tier": View(
        """
SELECT run, tier, count(*) AS events, count(DISTINCT lane) AS lanes,
       sum(dur_ns) FILTER (WHERE depth = 0) AS top_level_ns, sum(dur_ns) AS all_ns
FROM events
GROUP BY run, tier
ORDER BY run, min(CASE tier WHEN 'framework' THEN 0 WHEN 'framework device' THEN 1 WHEN 'runtime' THEN 2
                            WHEN 'hardware' THEN 3 ELSE 4 END)
""",
        ("events",),
        "Events, lanes and time per tier (framework, framework device, runtime, hardware); `top_level_ns` sums "
        "only events not nested inside another on their lane.",
    ),
}
