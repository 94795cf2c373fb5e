"""Runs over time as a small SVG made on the server (no script, no CDN)."""
from __future__ import annotations

from xml.sax.saxutils import escape

SERIES = (("recall", "#175cd3"), ("mrr", "#1f7a3a"), ("hit@1", "#9a6700"))
WIDTH, HEIGHT, PAD = 640, 240, 36


def runs_svg(points: list[dict], *, title: str) -> str:
    """A line per metric (recall, MRR, hit@1; 0 to 1) over `points` ({"label", "overall": {...}}), oldest first."""
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    step = inner_w / max(1, len(points) - 1)

    def xy(index: int, value: float) -> str:
        return f"{PAD + index * step:.1f},{PAD + inner_h * (1 - max(0.0, min(1.0, value))):.1f}"

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title, {chr(34): "&quot;"})}">',
             f"<title>{escape(title)}</title>",
             f'<rect x="{PAD}" y="{PAD}" width="{inner_w}" height="{inner_h}" fill="none" stroke="#ccc"/>']
    for tick in (0.0, 0.5, 1.0):
        y = PAD + inner_h * (1 - tick)
        parts.append(f'<text x="{PAD - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{tick:.1f}</text>')
    for index, point in enumerate(points):
        x = PAD + index * step
        parts.append(f'<text x="{x:.1f}" y="{HEIGHT - PAD + 14}" font-size="10" text-anchor="middle">'
                     f"{escape(str(point['label']))}</text>")
    for number, (metric, colour) in enumerate(SERIES):
        values = [(i, p["overall"].get(metric)) for i, p in enumerate(points) if p["overall"].get(metric) is not None]
        if values:
            coords = " ".join(xy(i, v) for i, v in values)
            parts.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>')
            for i, v in values:
                cx, cy = xy(i, v).split(",")
                parts.append(f'<circle cx="{cx}" cy="{cy}" r="3" fill="{colour}"><title>{escape(metric)} '
                             f"{v:.3f}</title></circle>")
        parts.append(f'<text x="{PAD + 90 * number}" y="{PAD - 12}" font-size="11" fill="{colour}">{escape(metric)}</text>')
    parts.append("</svg>")
    return "".join(parts)
