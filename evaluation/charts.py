"""Runs over time as a small SVG made on the server (the drawing: core/charts.py)."""
from __future__ import annotations

from core.charts import lines_svg

SERIES = (("recall", "#175cd3"), ("mrr", "#1f7a3a"), ("hit@1", "#9a6700"))


def runs_svg(points: list[dict], *, title: str) -> str:
    """A line per metric (recall, MRR, hit@1; 0 to 1) over `points` ({"label", "overall": {...}}), oldest first."""
    labels = [str(point["label"]) for point in points]
    series = [(metric, colour, [point["overall"].get(metric) for point in points]) for metric, colour in SERIES]
    return lines_svg(labels, series, title=title, y_max=1.0)
