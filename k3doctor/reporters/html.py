"""``--report report.html``: one self-contained file to attach to a ticket.

No scripts, fonts or images from elsewhere: inline CSS, an inline SVG per-rank memory chart (when
the run has a launch and a GPU to plan for), the findings with their fixes, the skipped checks
with their reasons, and the facts each node was checked on (as collected; secrets in the
environment are redacted by the probes).
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..model import Severity
from ..runner import Report
from ..termsafe import sanitize
from .grouping import blocks

if TYPE_CHECKING:
    from ..facts import Facts

__all__ = ["render_html", "write_html_report", "memory_chart_svg"]

_SEV = {Severity.ERROR: ("error", "#c62828"), Severity.WARNING: ("warning", "#b26a00"), Severity.INFO: ("note", "#1565c0")}
#: rich style names of the plan chart -> colours
_COLOURS = {"blue": "#1e64c8", "cyan": "#00a0b4", "green": "#2e9e44", "bright_green": "#7ccf5a",
            "magenta": "#a040a0", "bright_magenta": "#d070d0", "yellow": "#c8a000", "bright_yellow": "#e8d060",
            "white": "#9e9e9e", "red": "#d03030", "bright_blue": "#70a0ff", "bright_cyan": "#70e0f0",
            "bright_black": "#606060"}

_CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:2em;max-width:72em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}table{border-collapse:collapse;width:100%}
td,th{border:1px solid #ddd;padding:.35em .5em;vertical-align:top;text-align:left}
code,pre{font:12.5px ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
.sev{font-weight:bold}details pre{background:#f6f6f6;padding:.8em;overflow:auto}"""


def _esc(text: str) -> str:
    """HTML-escaped text with input's control characters shown as ``\\xNN`` (a report that is
    ``cat`` to a terminal, or opened in a viewer, must not carry escape sequences)."""
    return html.escape(sanitize(text))


def _plan_of(facts: "Facts") -> Any:
    """The per-rank plan of one node's facts, or None when it cannot be projected."""
    from ..memory.plan import plan_from_facts

    try:
        return plan_from_facts(facts)
    except Exception:  # noqa: BLE001 - the chart is an extra; a plan that cannot be made is left out
        return None


def memory_chart_svg(plan: Any, width: int = 640) -> str:
    """Stacked bars, one per distinct rank shape: weights by role, transient, KV, state, reserve, free."""
    from ..memory.render import _distinct, _ranges, bar_segments
    from ..units import GiB

    shapes = _distinct(plan)
    row = 28
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width + 260}" height="{row * len(shapes) + 40}" '
           f'role="img" aria-label="per-rank GPU memory">']
    used: dict[str, str] = {}
    for i, (ranks, r) in enumerate(shapes):
        y = 10 + i * row
        svg.append(f'<text x="0" y="{y + 15}" font-size="12">ranks {_esc(_ranges(ranks))}</text>')
        x = 90
        for name, cells, _ch, style in bar_segments(r, plan.gpu.memory_total, width):
            if cells <= 0:
                continue
            colour = "#ffffff" if name == "free" else _COLOURS.get(style, "#888888")
            used[name] = colour
            svg.append(f'<rect x="{x}" y="{y}" width="{cells}" height="20" fill="{colour}" stroke="#555" '
                       f'stroke-width="0.3"><title>{_esc(name)}</title></rect>')
            x += cells
        svg.append(f'<text x="{90 + width + 8}" y="{y + 15}" font-size="12">'
                   f'{r.weights_bytes / GiB:.2f} GiB weights</text>')
    lx = 90
    ly = 10 + len(shapes) * row + 12
    for name, colour in used.items():
        svg.append(f'<rect x="{lx}" y="{ly - 9}" width="10" height="10" fill="{colour}" stroke="#555" '
                   f'stroke-width="0.3"/><text x="{lx + 13}" y="{ly}" font-size="10">{_esc(name)}</text>')
        lx += 18 + 6 * len(name)
    svg.append("</svg>")
    return "".join(svg)


def render_html(report: Report, options: dict[str, Any] | None = None) -> str:
    """The whole document as one string."""
    c = report.counts()
    esc = _esc
    crashed = f", {c['crash']} crashed" if c["crash"] else ""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>k3doctor report: {esc(str(report.source))}</title><style>{_CSS}</style></head><body>",
             f"<h1>k3doctor {esc(__version__)}: {c['error']} errors, {c['warning']} warnings, {c['info']} notes"
             f" (exit {report.exit_code})</h1>",
             f"<p>{report.ran} checks ran ({c['pass']} passed, {c['fail']} failed), {c['skip']} skipped"
             f"{crashed}"
             f" · {esc(str(report.source))} · {report.duration_s:.2f} s</p>"]
    launch = report.meta.get("launch")
    if launch:
        parts.append(f"<p>launch: <code>{esc(str(launch))}</code></p>")
    for label, facts in report.node_facts:
        plan = _plan_of(facts)
        if plan is not None:
            parts.append(f"<h2>Per-rank memory ({esc(label)}): {esc(plan.engine)} on {plan.parallel.world} × "
                         f"{esc(plan.gpu.name)}, {'fits' if plan.fits else 'does not fit'}</h2>")
            parts.append(memory_chart_svg(plan))
            break
    parts.append("<h2>Findings</h2>")
    if report.findings:
        parts.append("<table><tr><th>severity</th><th>code</th><th>subject</th><th>finding</th><th>fix</th></tr>")
        for b in blocks(report.findings):
            name, colour = _SEV[b.severity]
            fix = "".join(f"<pre>{esc(p)}</pre>" for p in b.fix)
            parts.append(f'<tr><td class="sev" style="color:{colour}">{name}</td><td><code>{esc(b.code)}</code></td>'
                         f"<td>{esc(b.subject)}</td><td>{esc(b.message)}</td><td>{fix}</td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p>none</p>")
    reasons = report.skip_reasons()
    if reasons:
        parts.append("<h2>Skipped checks</h2><table><tr><th>checks</th><th>reason</th></tr>")
        for reason, codes in reasons.items():
            parts.append(f"<tr><td>{esc(', '.join(codes))}</td><td>{esc(reason)}</td></tr>")
        parts.append("</table>")
    parts.append("<h2>Facts</h2>")
    for label, facts in report.node_facts:
        doc = json.dumps(facts.known(), indent=1, default=str, sort_keys=True)
        parts.append(f"<details><summary>{esc(label)}</summary><pre>{esc(doc)}</pre></details>")
    if report.config is not None:
        parts.append("<details><summary>configuration</summary>"
                     f"<pre>{esc(json.dumps(report.config, indent=1, default=str))}</pre></details>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_html_report(report: Report, path: str, options: dict[str, Any] | None = None) -> None:
    """Write the report; a path that cannot be written is a usage error naming it."""
    import sys

    import click

    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(render_html(report, options))
    except OSError as exc:
        raise click.UsageError(f"--report {path}: cannot write ({exc.strerror or exc})") from None
    sys.stderr.write(f"k3doctor: wrote the HTML report to {path}\n")
