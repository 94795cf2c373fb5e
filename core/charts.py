"""Line charts as small SVGs made on the server (no script, no CDN): evaluation runs, usage per day."""
from __future__ import annotations

import math
from xml.sax.saxutils import escape

WIDTH, HEIGHT, PAD = 640, 240, 36


def _nice_max(value: float) -> float:
    """The smallest of 1, 2, 5 × 10^n at or above `value` (at least 1): a readable top of the scale."""
    if value <= 1:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(value))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= value)


def lines_svg(labels: list[str], series: list[tuple[str, str, list[float | None]]], *, title: str,
              y_max: float | None = None, digits: int = 3) -> str:
    """A line per series (name, colour, one value per label; None: no point) over `labels`, left to right.

    `y_max`: the top of the scale (1.0 for rates); None: the smallest 1, 2 or 5 × 10^n above every value.
    """
    values = [v for _, _, vs in series for v in vs if v is not None]
    top = y_max if y_max is not None else _nice_max(max(values, default=0.0))
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    step = inner_w / max(1, len(labels) - 1)
    # Label at most ~12 points on the x axis, so dates do not overlap.
    every = max(1, -(-len(labels) // 12))

    def xy(index: int, value: float) -> str:
        return f"{PAD + index * step:.1f},{PAD + inner_h * (1 - max(0.0, min(1.0, value / top))):.1f}"

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title, {chr(34): "&quot;"})}">',
             f"<title>{escape(title)}</title>",
             f'<rect x="{PAD}" y="{PAD}" width="{inner_w}" height="{inner_h}" fill="none" stroke="#ccc"/>']
    for fraction in (0.0, 0.5, 1.0):
        y = PAD + inner_h * (1 - fraction)
        tick = top * fraction
        text = f"{tick:.1f}" if top <= 1 else f"{tick:g}"
        parts.append(f'<text x="{PAD - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{text}</text>')
    for index, label in enumerate(labels):
        if index % every == 0 or index == len(labels) - 1:
            x = PAD + index * step
            parts.append(f'<text x="{x:.1f}" y="{HEIGHT - PAD + 14}" font-size="10" text-anchor="middle">'
                         f"{escape(str(label))}</text>")
    for number, (name, colour, series_values) in enumerate(series):
        points = [(i, v) for i, v in enumerate(series_values) if v is not None]
        if points:
            coords = " ".join(xy(i, v) for i, v in points)
            parts.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>')
            for i, v in points:
                cx, cy = xy(i, v).split(",")
                parts.append(f'<circle cx="{cx}" cy="{cy}" r="3" fill="{colour}"><title>{escape(name)} '
                             f"{escape(str(labels[i]))}: {v:.{digits}f}</title></circle>")
        parts.append(f'<text x="{PAD + 110 * number}" y="{PAD - 12}" font-size="11" fill="{colour}">{escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)
