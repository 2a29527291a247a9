"""Terminal rendering of a :class:`Plan`: a table per distinct rank shape and stacked bars."""

from __future__ import annotations

import re
from typing import Any, Sequence

from .plan import Plan, RankMemory

__all__ = ["render_plan", "render_search", "bar_segments"]

from ..units import GiB
_ROLE_ORDER = ("experts", "shared_experts", "dense_mlp", "attention", "mla_q_a_kv_a", "kda_f_a", "mla_absorbed",
               "latent_proj", "router", "embedding", "lm_head", "vision", "norms", "rope_cache", "load_nontorch", "other", "mtp")
_ROLE_STYLE = {
    "experts": ("E", "blue"), "shared_experts": ("S", "cyan"), "dense_mlp": ("D", "cyan"), "attention": ("A", "green"),
    "mla_q_a_kv_a": ("q", "bright_green"), "kda_f_a": ("f", "bright_green"), "mla_absorbed": ("w", "green"),
    "latent_proj": ("L", "magenta"), "router": ("R", "bright_magenta"), "embedding": ("V", "yellow"),
    "lm_head": ("H", "yellow"), "vision": ("I", "bright_yellow"), "norms": ("n", "white"), "other": ("o", "white"),
    "load_nontorch": ("x", "white"), "rope_cache": ("p", "white"),
}
_EXTRA_STYLE = {"transient": ("T", "red"), "kv": ("K", "bright_blue"), "state": ("s", "bright_cyan"),
                "reserve": ("r", "bright_black"), "free": (".", "white")}


_RESERVE_LABEL = {
    "activations": "profile-run peak (activations / sampler)", "cuda_graphs": "CUDA-graph estimate",
    "non_torch": "non-torch (NCCL, cuBLAS workspaces)", "cuda_context": "CUDA context",
    "nccl": "NCCL communicators", "driver_reserved": "driver-reserved (not CUDA-visible)",
}


def _gib(b: float) -> str:
    return f"{b / GiB:.2f}"


def _ordered(components: dict[str, int]) -> list[tuple[str, int]]:
    keys = [k for k in _ROLE_ORDER if k in components] + sorted(k for k in components if k not in _ROLE_ORDER)
    return [(k, components[k]) for k in keys]


def bar_segments(r: RankMemory, total: int, width: int = 60) -> list[tuple[str, int, str, str]]:
    """(name, cells, char, style) segments of one rank's stacked bar (weights by role, transient,
    KV, state, reserve, free), scaled to ``total`` bytes over ``width`` cells."""
    segs: list[tuple[str, float]] = [(k, v) for k, v in _ordered(r.components) if v > 0]
    segs += [("transient", r.transient_bytes), ("kv", r.kv_bytes), ("state", r.state_bytes),
             ("reserve", r.reserve_bytes), ("free", max(0, r.free_bytes))]
    out: list[tuple[str, int, str, str]] = []
    scale = width / max(1, total)
    acc = 0.0
    used = 0
    for name, b in segs:
        acc += b * scale
        cells = max(0, min(width, round(acc)) - used)
        if b > 0 and cells == 0 and name in ("experts", "kv", "transient"):
            cells = 1
        used += cells
        ch, style = _ROLE_STYLE.get(name) or _EXTRA_STYLE.get(name, ("?", "white"))
        out.append((name, cells, ch, style))
    return out


def render_plan(plan: Plan, console: Any, findings: Sequence[Any] = ()) -> None:
    from rich.table import Table
    from rich.text import Text

    p = plan.parallel
    _say(console, f"{plan.model_name or 'model'} on {plan.parallel.world} × {plan.gpu.name} "
                  f"({_gib(plan.gpu.memory_total)} GiB) — {plan.engine} {_label(plan)}", style="bold")
    src = "shard headers" if plan.inventory_source == "headers" else "config.json (synthesised)"
    _say(console, f"inventory: {plan.n_tensors:,} tensors, {plan.model_total_bytes / 1e9:,.2f} GB from {src}"
                  + ("  HEADER-ONLY" if plan.header_only else ""))
    shapes = _distinct(plan)
    for ranks, r in shapes:
        t = Table(title=f"ranks {_ranges(ranks)} (PP stage {r.stage})", show_lines=False)
        t.add_column("component")
        t.add_column("GiB", justify="right")
        t.add_column("bytes", justify="right")
        for k, v in _ordered(r.components):
            t.add_row(k, _gib(v), f"{v:,}")
        t.add_row("[bold]weights[/bold]", f"[bold]{_gib(r.weights_bytes)}[/bold]", f"{r.weights_bytes:,}")
        t.add_row("load transient (peak extra)", _gib(r.transient_bytes), f"{r.transient_bytes:,}")
        t.add_row("KV cache", _gib(r.kv_bytes), f"{r.kv_bytes:,}")
        if r.state_bytes:
            t.add_row("KDA state pool", _gib(r.state_bytes), f"{r.state_bytes:,}")
        t.add_row("reserve (outside weights and KV)", _gib(r.reserve_bytes), f"{r.reserve_bytes:,}")
        for k, v in r.reserve_components.items():
            t.add_row(f"  · {_RESERVE_LABEL.get(k, k)}", _gib(v), f"{v:,}", style="dim")
        t.add_row("free", _gib(r.free_bytes), f"{r.free_bytes:,}")
        console.print(t)
    _say(console, "per-rank memory (stacked; weights by role, T transient, K KV, s state, r reserve, . free):")
    for ranks, r in shapes:
        line = Text(f"{_ranges(ranks):>9} |")
        cells_wide = max(20, min(60, int(getattr(console, "width", 100)) - 32))
        for _name, cells, ch, style in bar_segments(r, plan.gpu.memory_total, cells_wide):
            if cells:
                line.append(ch * cells, style=style)
        line.append(f"| {_gib(r.weights_bytes)} GiB weights")
        console.print(line)
    legend = " ".join(f"{_ROLE_STYLE[k][0]}={k}" for k in _ROLE_ORDER if k in _ROLE_STYLE and
                      any(k in r.components for _, r in shapes))
    _say(console, legend, first="          ")
    ctx = plan.requested_context
    conc = plan.requested_concurrency
    if plan.header_only:
        _say(console, "KV: not projected (unknown architecture: the memory left for KV is shown, not tokens)")
    else:
        _say(console, f"KV: {plan.kv_tokens:,} tokens per rank ({plan.kv_bytes_per_token:,} B/token); max context "
                      f"{plan.max_context:,} at concurrency {conc}"
                      + (f"; max concurrency {plan.max_concurrency:,}" + (f" at {ctx:,} tokens" if ctx else "")
                         if plan.max_concurrency is not None else ""))
    if plan.fits:
        _say(console, "verdict: fits", style="bold green")
    else:
        _say(console, "verdict: does not fit: " + "; ".join(plan.why), style="bold red", indent="    ")
    for n in plan.notes:
        _say(console, f"note: {n}", style="dim", indent="      ")
    for f in findings:
        sev = getattr(f, "severity", None)
        label = sev.label if sev is not None else "info"
        color = {"error": "red", "warning": "yellow"}.get(label, "cyan")
        _say(console, f"{f.code} {label}: {f.message}", style=color, indent="    ")
        if f.fix:
            from rich.text import Text

            from ..reporters.fold import fold

            for fix_line in fold(f.fix, max(40, int(getattr(console, "width", 100))), "    fix: ", "         "):
                console.print(Text(fix_line), soft_wrap=True)
    del p


def render_search(cands: Sequence[Any], console: Any, top: int) -> None:
    from rich.table import Table

    from .search import candidate_label

    fits = [c for c in cands if c.fits]
    shown = min(top, len(fits))
    t = Table(title=f"feasible plans (top {shown} of {len(fits)}; ranked by fewest GPUs, then most KV)")
    for col in ("#", "plan", "GPUs", "nodes", "weights/rank GiB", "KV tokens/rank", "max context", "max conc."):
        t.add_column(col, justify="right" if col not in ("plan",) else "left", overflow="fold")
    for i, c in enumerate(fits[:top], 1):
        pl = c.plan
        t.add_row(str(i), candidate_label(c.parallel), str(c.parallel.world), str(c.nodes),
                  _gib(pl.max_rank_weights_bytes), f"{pl.kv_tokens:,}", f"{pl.max_context:,}",
                  "-" if pl.max_concurrency is None else f"{pl.max_concurrency:,}")
    console.print(t)
    bad = [c for c in cands if not c.fits]
    if bad:
        groups: dict[str, list[Any]] = {}
        for c in bad:
            groups.setdefault(_reason_key(c.reason.split(";")[0]), []).append(c)
        _say(console, "why the others fail:")
        for _key, members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            labels = [f"{candidate_label(c.parallel)} ({_plural(c.parallel.world, 'GPU')})" for c in members]
            listed = ", ".join(labels[:6]) + (f", and {len(labels) - 6} more" if len(labels) > 6 else "")
            _say(console, f"- {_filled_reason([c.reason.split(';')[0] for c in members])}: {listed}", indent="    ",
                 first="  ")


_NUM = re.compile(r"\b\d[\d,]*(?:\.\d+)?")


def _reason_key(r: str) -> str:
    """A reason with its numbers masked: plans that fail for the same reason share it."""
    return _NUM.sub("N", r).strip()


def _filled_reason(reasons: list[str]) -> str:
    """One reason text for a group: each number is the members' value, or their range (min–max)."""
    first = reasons[0]
    values = [[m.group(0) for m in _NUM.finditer(r)] for r in reasons]
    slots = iter(range(len(values[0])))

    def fill(m: re.Match[str]) -> str:
        i = next(slots)
        column = [v[i] for v in values if i < len(v)]
        nums = sorted({float(x.replace(",", "")) for x in column})
        if len(nums) <= 1:
            return m.group(0)
        lo, hi = (min(column, key=lambda x: float(x.replace(",", ""))),
                  max(column, key=lambda x: float(x.replace(",", ""))))
        return f"{lo}–{hi}"

    return _NUM.sub(fill, first)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def _say(console: Any, text: str, style: str = "", first: str = "", indent: str = "") -> None:
    """Print prose folded at the console's width (never cut, never broken inside a word)."""
    from rich.text import Text

    from ..reporters.fold import fold

    for line in fold(text, max(40, int(getattr(console, "width", 100))), first, indent or first, commands=False):
        console.print(Text(line, style=style), soft_wrap=True)


def _label(plan: Plan) -> str:
    from .search import candidate_label

    return candidate_label(plan.parallel)


def _distinct(plan: Plan) -> list[tuple[list[int], RankMemory]]:
    out: dict[int, tuple[list[int], RankMemory]] = {}
    for r in plan.ranks:
        if r.stage not in out:
            out[r.stage] = ([], r)
        out[r.stage][0].append(r.rank)
    return list(out.values())


def _ranges(ranks: list[int]) -> str:
    if not ranks:
        return "-"
    return f"{ranks[0]}" if len(ranks) == 1 else f"{ranks[0]}–{ranks[-1]}"
