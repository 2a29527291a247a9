"""Recompute projected vs measured per-rank weight memory for the public receipts.

Each ``fixtures/receipts/*.json`` holds one public engine log line ("Load weight end … mem usage="
or "Model loading took … GiB") together with the model and the launch command of the same report.
Every receipt carries a ``split``: ``dev`` (the receipts the rules were written against) or
``heldout`` (collected later, scored before any rule change, never tuned on; docs/validation.md says
how the split is fixed). Results are reported overall, per split and per group.
Usage: ``python -m k3doctor.memory.validate [--json]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shlex
import statistics
import sys
from pathlib import Path
from typing import Any

from .inventory import load_inventory, read_config_any, with_launch_quantization_inventory
from ..launch import LaunchSpec
from .plan import compute_plan, gpu_platform, resolve_gpu

from ..units import GiB
RECEIPTS = Path(__file__).resolve().parents[2] / "fixtures" / "receipts"

__all__ = ["load_receipts", "evaluate", "summary", "split_summaries", "SPLITS", "main"]

SPLITS = ("dev", "heldout")


ROOT = RECEIPTS.parents[1]


def load_receipts(folder: Path = RECEIPTS) -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]


def _argv(launch: str) -> list[str]:
    text = re.sub(r"\s+\(.*\)\s*$", "", launch.strip())  # drop a trailing "(note)"
    return shlex.split(text)


def _config(rec: dict[str, Any]) -> dict[str, Any] | None:
    """The receipt's config when it names a file under the repository (receipt configs, with a
    ModelOpt side file if there is one), else None (a known id is read by load_inventory)."""
    p = ROOT / (rec.get("config") or rec["model"])
    return read_config_any(p) if p.is_file() else None


def _gpu(name: str | None) -> Any:
    try:
        return resolve_gpu(name or "h100")
    except KeyError:
        g = resolve_gpu("h100")  # weights do not depend on the GPU; only the KV figure would
        if gpu_platform(name) == "rocm":  # ... except vLLM's ROCm load measurement (plan.gpu_platform)
            g = dataclasses.replace(g, name=str(name))
        return g


def evaluate(rec: dict[str, Any]) -> dict[str, Any]:
    """Projected vs measured for one receipt; ``error_pct`` None (+ ``unanswered``) when the
    projection refused."""
    from k3doctor.launch import parse_launch

    out: dict[str, Any] = {"id": rec["id"], "engine": rec["engine"], "model": rec["model"], "gpu": rec.get("gpu"),
                           "groups": list(rec.get("groups") or []), "split": rec.get("split", "dev"), "measured_gib": float(rec["measured"]["weights_gib"])}
    argv = _argv(rec["launch"])
    if argv and argv[0] == "xinference":  # xinference drives SGLang with one GPU
        launch = {"engine": "sglang", "tp": 1, "model": rec["model"]}
    else:
        launch = parse_launch(argv).to_dict()
    launch["engine"] = rec["engine"]
    try:
        cfg = _config(rec)
        inv = load_inventory(None, config=cfg) if cfg is not None else load_inventory(rec.get("config") or rec["model"])
        inv = with_launch_quantization_inventory(inv, launch)
        par = LaunchSpec.of(launch).placement()
        par.gpus_per_node = None
        plan = compute_plan(inv, par, _gpu(rec.get("gpu")), model_name=rec["model"])
    except Exception as exc:  # noqa: BLE001 - a refusal is a result here ("unanswered")
        out.update(plan="?", projected_gib=None, error_pct=None, unanswered=f"{type(exc).__name__}: {exc}")
        return out
    stage = rec["measured"].get("stage")
    if isinstance(stage, int) and 0 <= stage < len(plan.stages):
        proj = plan.stages[stage].weights_bytes / GiB  # the stage whose rank printed the line
    else:
        proj = plan.max_rank_weights_bytes / GiB
    meas = out["measured_gib"]
    out.update(plan=f"TP{par.tp}" + (f" EP{par.moe_ep}" if par.moe_ep > 1 else "") + (f" PP{par.pp}" if par.pp > 1 else "")
               + (f" DP{par.dp}" if par.dp > 1 else ""),
               projected_gib=round(proj, 3), error_pct=round(100 * (proj - meas) / meas, 2),
               approximate=bool(inv.spec is not None and inv.spec.approximate), family=inv.spec.family if inv.spec else None)
    kv = rec["measured"].get("available_kv_gib")
    if kv is not None and rec["engine"] == "vllm":
        pk = plan.kv_avail_bytes / GiB  # signed, like the engine's "Available KV cache memory"
        out["kv_projected_gib"] = round(pk, 2)
        out["kv_measured_gib"] = kv
    return out


def _group_of(tag: str) -> str:
    return tag.split(":", 1)[0]


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Overall and per group (quantized, pp, eplb, multimodal, fallback-arch, large-moe, ...):
    n, unanswered, median / max / mean absolute error."""
    def stats(rs: list[dict[str, Any]]) -> dict[str, Any]:
        errs = [abs(r["error_pct"]) for r in rs if r.get("error_pct") is not None]
        d: dict[str, Any] = {"n": len(rs), "unanswered": sum(1 for r in rs if r.get("error_pct") is None)}
        if errs:
            d.update(median_abs_error_pct=round(statistics.median(errs), 2), max_abs_error_pct=round(max(errs), 2),
                     mean_abs_error_pct=round(statistics.fmean(errs), 2))
        return d

    out = stats(rows)
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        for g in sorted({_group_of(t) for t in r.get("groups") or []} or {"untagged"}):
            groups.setdefault(g, []).append(r)
    out["groups"] = {g: stats(rs) for g, rs in sorted(groups.items())}
    out["quantized_formats"] = sorted({t.split(":", 1)[1] for r in rows for t in r.get("groups") or []
                                       if t.startswith("quantized:")})
    return out


def split_summaries(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``summary`` of each split (``dev``, ``heldout``) on its own."""
    return {sp: summary([r for r in rows if r.get("split", "dev") == sp]) for sp in SPLITS}


def _summary_lines(title: str, s: dict[str, Any]) -> list[str]:
    lines = [f"**{title}**: n = {s['n']}; unanswered {s['unanswered']}; median |error| {s.get('median_abs_error_pct')}%, "
             f"max |error| {s.get('max_abs_error_pct')}%, mean |error| {s.get('mean_abs_error_pct')}%",
             "", "| group | n | unanswered | median abs error | max abs error |", "|---|---:|---:|---:|---:|"]
    for g, d in s["groups"].items():
        lines.append(f"| {g} | {d['n']} | {d['unanswered']} | {d.get('median_abs_error_pct', '-')}% | {d.get('max_abs_error_pct', '-')}% |")
    return lines + [""]


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| receipt | split | engine | model | plan | GPU | groups | measured GiB | projected GiB | error |",
             "|---|---|---|---|---|---|---|---:|---:|---:|"]
    for r in rows:
        proj = f"{r['projected_gib']:.2f}" if r.get("projected_gib") is not None else "refused"
        err = f"{r['error_pct']:+.2f}%" if r.get("error_pct") is not None else "unanswered"
        lines.append(f"| {r['id']} | {r.get('split', 'dev')} | {r['engine']} | {r['model']} | {r['plan']} | {r['gpu']} "
                     f"| {', '.join(r.get('groups') or [])} | {r['measured_gib']:.2f} | {proj} | {err} |")
    s = summary(rows)
    lines.append("")
    for sp, ss in split_summaries(rows).items():
        lines += _summary_lines(f"{sp} ({'held out: never tuned on' if sp == 'heldout' else 'the rules were fixed against these'})", ss)
    lines += _summary_lines("all receipts", s)
    lines.append(f"quantized formats: {', '.join(s['quantized_formats'])}")
    kv = [r for r in rows if "kv_projected_gib" in r]
    if kv:
        lines += ["", "| receipt | measured available KV GiB | projected KV GiB |", "|---|---:|---:|"]
        for r in kv:
            lines.append(f"| {r['id']} | {r['kv_measured_gib']:.2f} | {r['kv_projected_gib']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--receipts", default=str(RECEIPTS))
    a = ap.parse_args(argv)
    rows = [evaluate(r) for r in load_receipts(Path(a.receipts))]
    if a.json:
        print(json.dumps({"rows": rows, "summary": summary(rows), "splits": split_summaries(rows)}, indent=1))
    else:
        sys.stdout.write(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
