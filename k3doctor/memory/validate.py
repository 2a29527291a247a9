"""Recompute projected vs measured per-rank weight memory for the public receipts.

Each ``fixtures/receipts/*.json`` holds one public engine log line ("Load weight end … mem usage="
or "Model loading took … GiB") together with the model and the launch command of the same report.
Usage: ``python -m k3doctor.memory.validate [--json] [--markdown]``.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import statistics
import sys
from pathlib import Path
from typing import Any

from .inventory import load_inventory
from .plan import compute_plan, parallel_from_launch, resolve_gpu

GiB = 1 << 30
RECEIPTS = Path(__file__).resolve().parents[2] / "fixtures" / "receipts"

__all__ = ["load_receipts", "evaluate", "summary", "main"]


def load_receipts(folder: Path = RECEIPTS) -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]


def _argv(launch: str) -> list[str]:
    text = re.sub(r"\s+\(.*\)\s*$", "", launch.strip())  # drop a trailing "(note)"
    return shlex.split(text)


def evaluate(rec: dict[str, Any]) -> dict[str, Any]:
    from k3doctor.launch import parse_launch

    argv = _argv(rec["launch"])
    if argv and argv[0] == "xinference":  # xinference drives SGLang with one GPU
        launch = {"engine": "sglang", "tp": 1, "model": rec["model"]}
    else:
        launch = parse_launch(argv).to_dict()
    launch["engine"] = rec["engine"]
    inv = load_inventory(rec.get("config") or rec["model"])
    par = parallel_from_launch(launch)
    par.gpus_per_node = None
    plan = compute_plan(inv, par, resolve_gpu(rec["gpu"]), model_name=rec["model"])
    proj = plan.max_rank_weights_bytes / GiB
    meas = float(rec["measured"]["weights_gib"])
    out = {"id": rec["id"], "engine": rec["engine"], "model": rec["model"], "plan": f"TP{par.tp}"
           + (f" EP{par.moe_ep}" if par.moe_ep > 1 else "") + (f" PP{par.pp}" if par.pp > 1 else ""),
           "gpu": rec["gpu"], "projected_gib": round(proj, 3), "measured_gib": meas,
           "error_pct": round(100 * (proj - meas) / meas, 2)}
    kv = rec["measured"].get("available_kv_gib")
    if kv is not None and rec["engine"] == "vllm":
        pk = plan.kv_avail_bytes / GiB  # signed, like the engine's "Available KV cache memory"
        out["kv_projected_gib"] = round(pk, 2)
        out["kv_measured_gib"] = kv
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    errs = [abs(r["error_pct"]) for r in rows]
    return {"n": len(rows), "median_abs_error_pct": round(statistics.median(errs), 2),
            "max_abs_error_pct": round(max(errs), 2), "mean_abs_error_pct": round(statistics.fmean(errs), 2)}


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| receipt | engine | model | plan | GPU | measured GiB | projected GiB | error |",
             "|---|---|---|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['id']} | {r['engine']} | {r['model']} | {r['plan']} | {r['gpu']} | {r['measured_gib']:.2f} "
                     f"| {r['projected_gib']:.2f} | {r['error_pct']:+.2f}% |")
    s = summary(rows)
    lines.append("")
    lines.append(f"n = {s['n']}; median |error| {s['median_abs_error_pct']}%, max |error| {s['max_abs_error_pct']}%, "
                 f"mean |error| {s['mean_abs_error_pct']}%")
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
        print(json.dumps({"rows": rows, "summary": summary(rows)}, indent=1))
    else:
        sys.stdout.write(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
