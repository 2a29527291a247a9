"""Config-only inventory vs the real checkpoint: ``fixtures/checkpoint-totals/``.

Each record there holds a public checkpoint's ``config.json`` (as published, with the quantisation
side files beside it), its ``model.safetensors.index.json`` ``metadata.total_size`` and its tensor
names (``<id>.names.gz``). :func:`evaluate` builds a directory holding only those config files —
what ``k3doctor plan --model DIR`` sees before the download — reads its inventory (synthesised from
the config) and compares the inventory's total bytes with ``total_size``; it also compares the
tensor-name *families* (MTP block, vision tower, per-expert vs fused experts, scale tensors, ...)
the synthesis produced with those the checkpoint has. Splits: ``dev`` / ``heldout``, fixed by the
record id alone (:func:`split_of`). Usage: ``python -m k3doctor.memory.totals [--json]``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable

__all__ = ["TOTALS", "split_of", "load_records", "names_of", "families", "evaluate", "summary", "scored", "score", "main"]

TOTALS = Path(__file__).resolve().parents[2] / "fixtures" / "checkpoint-totals"
SPLITS = ("dev", "heldout")


def split_of(rid: str) -> str:
    """Held out exactly when ``int(sha256(id)[:8], 16) < 0x55555555`` (about one third); fixed
    before any record was scored."""
    return "heldout" if int(hashlib.sha256(rid.encode()).hexdigest()[:8], 16) < 0x55555555 else "dev"


def load_records(folder: Path = TOTALS) -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))
            if not p.name.startswith("_")]


def names_of(rec: dict[str, Any], folder: Path = TOTALS) -> list[str]:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "--", rec["id"]).strip("-")[:120]
    with gzip.open(folder / f"{stem}.names.gz", "rt", encoding="utf-8") as f:
        return [ln for ln in f.read().split("\n") if ln]


_VISION = re.compile(r"(^|\.)(visual|vision_tower|vision_model|vision_encoder|vision|vit|image_encoder|"
                     r"mm_projector|multi_modal_projector|vpm|sam_model|qwen2_model|img_projector|"
                     r"vision_embed_tokens|patch_embed|resampler|image_newline|view_seperator|projector)\.")
_AUDIO = re.compile(r"(^|\.)(audio_tower|audio_model|audio|apm|audio_projection|whisper)\.")
_SUFFIX = {
    "weight_scale_inv": "scale:weight_scale_inv", "weight_scale": "scale:weight_scale",
    "weight_scale_2": "scale:weight_scale_2", "input_scale": "scale:input_scale",
    "weight_packed": "q:weight_packed", "weight_zero_point": "q:weight_zero_point",
    "weight_global_scale": "scale:weight_global_scale", "qweight": "q:qweight", "qzeros": "q:qzeros",
    "scales": "q:scales", "g_idx": "q:g_idx", "absmax": "q:bnb", "quant_map": "q:bnb", "SCB": "q:bnb",
}


def families(names: Iterable[str], layers: int = 0) -> set[str]:
    """The families of tensor names a checkpoint (or a synthesis) has."""
    out: set[str] = set()
    for n in names:
        low = n.lower()
        last = n.rsplit(".", 1)[-1]
        if last in _SUFFIX:
            out.add(_SUFFIX[last])
        if last.endswith(("_blocks", "_scales")) and ".experts." in n:
            out.add("q:mxfp4_blocks")
        if _VISION.search(low) and not low.startswith(("model.layers.", "layers.")):
            out.add("vision")
        if _AUDIO.search(low):
            out.add("audio")
        if "mtp" in low.split(".")[0:3] or ".mtp." in low or low.startswith("mtp"):
            out.add("mtp")
        elif layers:
            m = re.search(r"(?:^|\.)layers\.(\d+)\.", n)
            if m and int(m.group(1)) >= layers and not _VISION.search(low):
                out.add("mtp")
        if re.search(r"\.experts\.\d+\.", n):
            out.add("experts:per-expert")
        elif ".experts." in n and re.search(r"\.experts\.(gate_up_proj|down_proj|w13|w2|w1|w3|gate_proj|up_proj)", n):
            out.add("experts:fused")
        if "shared_expert" in low:
            out.add("shared_expert")
        if last == "weight" and re.search(r"(^|\.)(lm_head|output|embed_out|head)$", n.rsplit(".", 1)[0]):
            out.add("lm_head")
        if re.search(r"(^|\.)(linear_attn|mamba|mixer\.in_proj|A_log)", n) or n.endswith("A_log"):
            out.add("recurrent")
    return out


def _config_dir(rec: dict[str, Any], d: Path) -> Path:
    (d / "config.json").write_text(json.dumps(rec["config"]))
    for name, doc in (rec.get("side_files") or {}).items():
        (d / name).write_text(json.dumps(doc))
    return d


def evaluate(rec: dict[str, Any], folder: Path = TOTALS) -> dict[str, Any]:
    """The config-only inventory's total vs ``total_size``, and the name families."""
    from .inventory import read_inventory
    from .synth import synthesise

    cfg = rec["config"]
    arch = (cfg.get("architectures") or [cfg.get("model_type", "?")])[0]
    out: dict[str, Any] = {"id": rec["id"], "split": rec.get("split") or split_of(rec["id"]), "arch": arch,
                           "tags": list(rec.get("tags") or []), "total_size": rec["total_size"]}
    try:
        with tempfile.TemporaryDirectory() as t:
            inv = read_inventory(_config_dir(rec, Path(t)))
    except Exception as exc:  # noqa: BLE001 - a refusal is a result ("unanswered")
        out.update(projected=None, error_pct=None, unanswered=f"{type(exc).__name__}: {str(exc)[:200]}")
        return out
    spec = inv.spec
    out.update(projected=inv.total_bytes, error_pct=round(100 * (inv.total_bytes - rec["total_size"]) / rec["total_size"], 2),
               family=spec.family if spec else None, approximate=bool(spec and spec.approximate),
               quant=spec.qscheme.method if spec else None)
    try:
        have = families(names_of(rec, folder), int(spec.layers) if spec else 0)
        synth = families((t.name for t in synthesise(spec, experts_limit=1)), int(spec.layers)) if spec else set()
        if spec and spec.vision_params:
            synth.add("vision")
        out["families_missing"] = sorted(have - synth)   # in the checkpoint, not synthesised
        out["families_extra"] = sorted(synth - have)     # synthesised, not in the checkpoint
    except Exception as exc:  # noqa: BLE001
        out["families_error"] = f"{type(exc).__name__}: {exc}"
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    errs = [abs(r["error_pct"]) for r in rows if r.get("error_pct") is not None]
    return {"n": len(rows), "unanswered": sum(1 for r in rows if r.get("error_pct") is None),
            "median_abs_pct": round(statistics.median(errs), 2) if errs else None,
            "max_abs_pct": round(max(errs), 2) if errs else None,
            "within_2pct": sum(1 for e in errs if e <= 2), "within_15pct": sum(1 for e in errs if e <= 15),
            "family_mismatches": sum(1 for r in rows if r.get("families_missing") or r.get("families_extra"))}


def scored(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records that are scored: not a fine-tune duplicate of another, not excluded."""
    return [r for r in records if not r.get("duplicate_of") and not r.get("excluded")]


def score(folder: Path = TOTALS) -> dict[str, Any]:
    rows = [evaluate(r, folder) for r in scored(load_records(folder))]
    splits: dict[str, Any] = {s: summary([r for r in rows if r["split"] == s]) for s in SPLITS}
    return {"rows": rows, "splits": splits, "all": summary(rows)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--heldout", action="store_true", help="list held-out rows too (default: their summary only)")
    ap.add_argument("--folder", default=str(TOTALS))
    a = ap.parse_args(argv)
    res = score(Path(a.folder))
    if a.json:
        print(json.dumps(res, indent=1))
        return 0
    print("| id | split | arch | quant | total GB | projected GB | error | families missing / extra |")
    print("|---|---|---|---|---:|---:|---:|---|")
    for r in sorted(res["rows"], key=lambda r: (r["split"], r["id"])):
        if r["split"] == "heldout" and not a.heldout:
            continue
        e = "unanswered" if r.get("error_pct") is None else f"{r['error_pct']:+.2f}%"
        pj = "" if r.get("projected") is None else f"{r['projected'] / 1e9:.2f}"
        fam = " ".join(["-" + f for f in r.get("families_missing", [])] + ["+" + f for f in r.get("families_extra", [])])
        print(f"| {r['id']} | {r['split']} | {r['arch']} | {r.get('quant') or ''} | {r['total_size'] / 1e9:.2f} | {pj} "
              f"| {e} | {fam} |")
    for name, summ in list(res["splits"].items()) + [("all", res["all"])]:
        print(f"\n**{name}**: " + ", ".join(f"{k} {v}" for k, v in summ.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
