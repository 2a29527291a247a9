#!/usr/bin/env python3
"""Build fixtures/checkpoint-totals/ records from fetched public mirrors.

Input: JSON lines from tools/ckpt_totals_scan.py (repo, commit, dir). For each, the published
config.json (and hf_quant_config.json / quantize_config.json beside it, when present) and
model.safetensors.index.json are read from the mirror at that commit; the record keeps the config
as published, ``metadata.total_size``, the tensor names (gzip, one per line) and the source URLs.
The split is fixed by the id alone (see fixtures/checkpoint-totals/README.md) and written now,
before any scoring.

Usage: python tools/ckpt_totals_build.py MIRROR_ROOT < scan.jsonl
"""

import gzip
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "checkpoint-totals"
SIDE = ("hf_quant_config.json", "quantize_config.json", "quant_config.json")


def split_of(rid: str) -> str:
    return "heldout" if int(hashlib.sha256(rid.encode()).hexdigest()[:8], 16) < 0x55555555 else "dev"


def show(repo: Path, commit: str, path: str) -> str | None:
    r = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True, check=False)
    return r.stdout.decode("utf-8", "replace") if r.returncode == 0 else None


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "--", text).strip("-")[:120]


def build(root: Path, row: dict) -> dict | None:
    repo = root / row["repo"].replace("/", "+", 1) / "repo"
    d = row["dir"]
    pre = d + "/" if d else ""
    cfg_t, idx_t = show(repo, row["commit"], pre + "config.json"), show(repo, row["commit"], pre + "model.safetensors.index.json")
    if not cfg_t or not idx_t:
        return None
    try:
        cfg, idx = json.loads(cfg_t), json.loads(idx_t)
    except json.JSONDecodeError:
        return None
    total = (idx.get("metadata") or {}).get("total_size")
    names = sorted((idx.get("weight_map") or {}).keys())
    if not isinstance(total, (int, float)) or total <= 0 or not names or not isinstance(cfg, dict):
        return None
    rid = row["repo"] + (":" + d if d else "")
    base = f"https://github.com/{row['repo']}/blob/{row['commit']}/{pre}"
    rec = {
        "id": rid,
        "split": split_of(rid),
        "source": {"repo": row["repo"], "commit": row["commit"], "commit_date": row.get("date"), "dir": d,
                   "config_url": base + "config.json", "index_url": base + "model.safetensors.index.json"},
        "name_or_path": cfg.get("_name_or_path"),
        "total_size": int(total),
        "n_tensors": len(names),
        "config": cfg,
    }
    for side in SIDE:
        t = show(repo, row["commit"], pre + side)
        if t:
            try:
                rec.setdefault("side_files", {})[side] = json.loads(t)
                rec["source"][side.replace(".", "_") + "_url"] = base + side
            except json.JSONDecodeError:
                pass
    stem = slug(rid)
    (OUT / f"{stem}.json").write_text(json.dumps(rec, indent=1, sort_keys=False) + "\n")
    with gzip.GzipFile(OUT / f"{stem}.names.gz", "wb", mtime=0) as f:
        f.write(("\n".join(names) + "\n").encode())
    return rec


def _main() -> None:
    if sys.argv[1:] == ["--finalise"]:
        finalise()
        return
    root = Path(sys.argv[1])
    OUT.mkdir(parents=True, exist_ok=True)
    for line in sys.stdin:
        r = build(root, json.loads(line))
        if r:
            print(r["split"], r["id"], r["total_size"], r["n_tensors"], (r["config"].get("architectures") or ["?"])[0])


# -- finalising: duplicates, exclusions, tags, the frozen index ---------------------------------
_SIG_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "intermediate_size",
             "vocab_size", "num_local_experts", "num_experts", "n_routed_experts", "moe_intermediate_size", "n_layer",
             "d_model", "n_embd", "num_layers", "torch_dtype", "dtype")
#: not a decoder LLM the engines serve as one (encoder-decoder translation models)
_NOT_DECODER = ("M2M100ForConditionalGeneration", "T5ForConditionalGeneration", "BartForConditionalGeneration",
                "T5GemmaForConditionalGeneration")


def signature(rec: dict) -> str:
    """Fine-tunes of one base share it: architecture, the text model's dimensions and dtype, the
    quantisation (config + side files) and the vision/audio configs."""
    c = rec["config"]
    t = c.get("text_config") or c.get("llm_config") or c
    side = {"quant": c.get("quantization_config") or t.get("quantization_config"), "side": rec.get("side_files")}
    extra = {k: c.get(k) for k in ("vision_config", "visual", "audio_config") if c.get(k)}
    return hashlib.sha256(json.dumps([(c.get("architectures") or [c.get("model_type")])[0],
                                      [t.get(k) if t.get(k) is not None else c.get(k) for k in _SIG_KEYS],
                                      side, extra], sort_keys=True, default=str).encode()).hexdigest()[:16]


def tags(rec: dict, names: list[str]) -> list[str]:
    c = rec["config"]
    t = c.get("text_config") or c.get("llm_config") or c
    joined = "\n".join(names)
    out = []
    experts = t.get("num_local_experts") or t.get("num_experts") or t.get("n_routed_experts") or t.get("moe_num_experts")
    out.append("moe" if experts or ".experts." in joined else "dense")
    if c.get("vision_config") or c.get("visual") or re.search(r"(^|\.)(visual|vision_tower|vision_model|vpm|vision)\.", joined):
        out.append("multimodal")
    lt = [str(x) for x in t.get("layer_types") or []]
    if any("linear" in x or "mamba" in x or "conv" in x for x in lt) or t.get("hybrid_override_pattern") or "A_log" in joined:
        out.append("hybrid")
    if t.get("num_nextn_predict_layers") or t.get("mtp_num_hidden_layers") or re.search(r"(^|\.)mtp", joined):
        out.append("mtp")
    q = c.get("quantization_config") or t.get("quantization_config") or {}
    hq = (rec.get("side_files") or {}).get("hf_quant_config.json")
    qc = (rec.get("side_files") or {}).get("quantize_config.json")
    if isinstance(q, dict) and q:
        m = str(q.get("quant_method") or ("bitsandbytes" if q.get("load_in_4bit") or q.get("load_in_8bit") else
                                          "mlx" if "bits" in q and "group_size" in q else "?"))
        out.append("quant:" + m.lower())
    elif hq:
        out.append("quant:modelopt")
    elif qc:
        out.append("quant:gptq(quantize_config.json)")
    elif "quantization" in c:
        out.append("quant:" + ("mlx" if "group_size" in (c.get("quantization") or {}) else "other"))
    else:
        out.append("quant:none")
    return out


def finalise() -> None:
    sys.path.insert(0, str(OUT.parents[1]))
    from k3doctor.memory.totals import names_of

    seen: dict[str, str] = {}
    index = []
    for p in sorted(OUT.glob("*.json")):
        if p.name.startswith("_"):
            continue
        rec = json.loads(p.read_text())
        names = names_of(rec, OUT)
        rec.pop("duplicate_of", None)
        rec.pop("excluded", None)
        s = signature(rec)
        arch = (rec["config"].get("architectures") or ["?"])[0]
        if s in seen:
            rec["duplicate_of"] = seen[s]
        else:
            seen[s] = rec["id"]
        if arch in _NOT_DECODER:
            rec["excluded"] = f"{arch} is not a decoder LLM"
        rec["tags"] = tags(rec, names)
        p.write_text(json.dumps(rec, indent=1) + "\n")
        digest = hashlib.sha256(json.dumps([rec["config"], rec.get("side_files"), rec["total_size"], names],
                                           sort_keys=True).encode()).hexdigest()[:16]
        index.append({"id": rec["id"], "split": rec["split"], "digest": digest, "tags": rec["tags"],
                      **({"duplicate_of": rec["duplicate_of"]} if "duplicate_of" in rec else {}),
                      **({"excluded": rec["excluded"]} if "excluded" in rec else {})})
    (OUT / "_index.json").write_text(json.dumps(index, indent=1) + "\n")
    used = [r for r in index if "duplicate_of" not in r and "excluded" not in r]
    print(f"{len(index)} records, {len(used)} scored (dev {sum(r['split'] == 'dev' for r in used)}, "
          f"held out {sum(r['split'] == 'heldout' for r in used)})")


if __name__ == "__main__":
    _main()
