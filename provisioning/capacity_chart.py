"""The capacity page's 30-day chart as data for inline SVG: one column per day, stacked held / reserved / queued GPU
equivalents, the cluster's capacity now as a line, and the viewer's teams' part as a second line. Pure."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

SERIES = (("held", "Held by running work", "#0b6bcb"), ("reserved", "Reserved (approved, not running yet)", "#1a7f37"),
          ("queued", "Waiting for approval", "#c27c0e"))


@dataclass(frozen=True)
class Column:
    x: float
    label: str
    title: str
    segments: tuple[tuple[float, float, str], ...]  # (y, height, colour)


def _step(maximum: float) -> float:
    """A round tick step (1, 2 or 5 x 10^n) giving about four ticks up to `maximum`."""
    raw = max(maximum, 1.0) / 4
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(f * magnitude for f in (1, 2, 5, 10) if raw <= f * magnitude)


def daily_columns(days: Sequence[Any], *, capacity: float | None, mine: bool, width: int = 760,
                  height: int = 220) -> dict:
    """`days`: objects with day, held, reserved, queued, mine (capacity_history.Day)."""
    left, right, top, bottom = 48, 12, 10, 28
    plot_w, plot_h = width - left - right, height - top - bottom
    used = max([d.held + d.reserved + d.queued for d in days] + [0.0])
    # The capacity line is drawn when it is near what was used; far above, it would flatten the bars to nothing.
    drawn = capacity if capacity and capacity <= max(used, 1.0) * 1.5 else None
    peak = max(used, drawn or 0, 1.0)
    step = _step(peak)
    axis_max = step * math.ceil(peak / step)
    scale = plot_h / axis_max
    slot = plot_w / max(len(days), 1)
    columns = []
    for index, day in enumerate(days):
        y, segments = float(top + plot_h), []
        for key, _, colour in SERIES:
            value = getattr(day, key)
            if value > 0:
                y -= value * scale
                segments.append((round(y, 1), round(value * scale, 1), colour))
        title = (f"{day.day:%Y-%m-%d}: {day.held:g} held, {day.reserved:g} reserved, {day.queued:g} waiting for "
                 f"approval (GPU equivalents, average over the day)")
        columns.append(Column(x=round(left + index * slot + slot * 0.15, 1), label=f"{day.day:%d %b}", title=title,
                              segments=tuple(segments)))
    ticks = [(round(top + plot_h - v * scale, 1), f"{v:g}") for v in
             (step * i for i in range(int(round(axis_max / step)) + 1))]
    mine_points = " ".join(f"{round(left + i * slot + slot / 2, 1)},{round(top + plot_h - d.mine * scale, 1)}"
                           for i, d in enumerate(days)) if mine else ""
    return {"width": width, "height": height, "left": left, "plot_right": width - right, "top": top,
            "baseline": top + plot_h, "bar_width": round(slot * 0.7, 1), "columns": columns, "ticks": ticks,
            "capacity_y": round(top + plot_h - drawn * scale, 1) if drawn else None, "capacity": capacity,
            "mine_points": mine_points, "legend": [(label, colour) for _, label, colour in SERIES],
            "label_every": 5}
