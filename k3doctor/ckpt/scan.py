"""Whole-checkpoint scan: every shard header, the index, config.json, quantised pairs, leftovers,
and (on request) sha256 verification and zero-range sampling.

:func:`scan_checkpoint` returns the compact, JSON-serialisable ``model`` fact (schema below) —
per-shard summaries and a capped list of problems, never the full tensor list — so every CKPT
check runs from a snapshot.

Performance (the 96-shard, 497,220-tensor Kimi-K3 layout: ~77 MB of headers, a 60 MB index):
each header and the index are read once; a header is parsed with the C ``json`` decoder unless its
shape (its bytes with the layer index normalised) already verified clean in this scan
(:mod:`.memo`), and the index is checked run by run against the shards' names without building its
map (:func:`.index.verify_runs`), or else parsed in slices (:mod:`.index`). Everything runs in this
process (:mod:`.shard_scan` says why there is no helper process).

Each parsed header's tensors also leave as raw rows (names, dtypes, byte spans) through the
``rows`` sink, when one is given (:class:`.shard_scan.TensorRows`); its :meth:`finish` gives
``model["inventory"]``. The memory planner's :class:`k3doctor.memory.fold.HeaderFold` is that sink
for the ``model`` fact (:func:`k3doctor.probes.checkpoint.model_fact`), so ``check --model DIR``
parses each header once and a snapshot plans without the directory; ``ckpt/`` imports nothing
from ``memory/``.

Fact schema (``model``; all sizes in bytes)::

    {"schema": 1, "dir", "exists", "layout": "hf_cache"|"hf_local_dir"|"plain",
     "repo", "repo_source": "option"|"hf-cache-path"|"launch"|null, "revision", "cache_dir",
     "found_via": "option"|"launch"|"launch-hf-cache"          (added by the probe),
     "config": {"present", "error": null|"missing"|"invalid", "architecture", "family", "model_type",
                "text_model_type", "quant_method", "quant_format", "fp4", "group_size", "block",
                "num_experts", "hidden_size", "moe_intermediate_size", "expert_hidden",
                "num_hidden_layers"},
     "index": {"present", "error", "size", "total_size", "tensors", "shards"},
     "shards": [{"file", "size", "header_len", "tensors", "data_bytes", "dtype_bytes": {dtype: bytes}, "ok"}],
     "totals": {"shards", "shards_ok", "tensors", "data_bytes", "file_bytes"},
     "quant": {"packed", "fp8", "blocks", "expert_layers", "experts_per_layer": {"min", "max"} | null},
     "inventory": {"schema": 1, "source": "headers"|"config", "tensors", "bytes", "shards", "max_shard_bytes",
                   "columns": ["template", "dtype", "bytes", "tensors", "experts", "layers"],
                   "groups": [[template, dtype, bytes, tensors, experts, "0-2,5,7-60"]],
                   "config": {config.json} | null, "errors": [{"file", "kind"}]} | null
                  (the memory planner's per-(layer, template) groups; format:
                  :func:`k3doctor.memory.fold.inventory_fact`; null when there is nothing to plan or
                  no ``rows`` sink was given),
     "problems": [{"kind", "file", "tensor"?, "safetensors_error"?, ...raw numbers}]  (<= 50 per kind),
     "problem_counts": {kind: n},
     "incomplete": [{"path", "size", "file"}],
     "deep": {"source": "manifest"|"hf-cache-blob"|"hf-local-metadata"|null, "files", "verified",
              "mismatched", "unverified": [file], "bytes", "seconds", "rate", "jobs", "manifest"} | null,
     "sample": {"seed", "ranges_per_shard", "shards", "read_bytes", "zero_ranges", "holes"} | null,
     "seconds": {"index", "shards", "cross_check", "deep"?, "sample"?, "total"}}

Problem kinds and the check that reports each: ``k3doctor.checks.ckpt.KIND_TO_CHECK``.
"""

from __future__ import annotations

import gc
import heapq
import json
import os
import random
import re
import stat
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ..boundedio import BoundedReadError, read_bytes
from . import layout as _layout
from .hashing import HashJob, hash_files, sample_file
from .header import problem, read_header
from .inventory import INDEX_FILE
from .quant import expectations
from .shard_scan import IndexMatcher, TensorRows, scan_shards

__all__ = ["scan_checkpoint", "FACT_SCHEMA", "PROBLEM_CAP"]

FACT_SCHEMA = 1
#: at most this many problems of one kind are kept (the total is in ``problem_counts``)
PROBLEM_CAP = 50
_CONFIG = "config.json"



# ------------------------------------------------------------------------------------------
# config and index
# ------------------------------------------------------------------------------------------
def _read_json(path: Path, what: str, problems: list[dict],
               fast: Callable[[bytes], Any] | None = None) -> tuple[bool, Any, int | None]:
    """``(present, obj | None, size)``; problems for unreadable/invalid files.

    Read through :func:`k3doctor.boundedio.read_bytes` (regular files only, a size cap per kind, a
    read deadline), so a FIFO, ``/dev/zero`` or ``/proc/kmsg`` in its place is a one-line problem,
    never a hang or a multi-GB read. ``fast`` (optional) parses the bytes the lean way or returns
    None, and then ``json.loads`` does (it names any error).
    """
    rel = path.name
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            problems.append(problem("dangling_symlink", rel, target=os.readlink(path)))
            return True, None, None
        return False, None, None
    except OSError as exc:
        problems.append(problem(f"{what}_unreadable", rel, error=exc.strerror or str(exc)))
        return True, None, None
    if stat.S_ISDIR(st.st_mode):
        problems.append(problem(f"{what}_invalid", rel, error="is a directory"))
        return True, None, st.st_size
    try:
        raw = read_bytes(path, kind=what)
    except BoundedReadError as exc:
        problems.append(problem(f"{what}_unreadable", rel, error=exc.reason))
        return True, None, st.st_size if stat.S_ISREG(st.st_mode) else None
    obj = fast(raw) if fast is not None else None
    err = None
    if obj is None:
        obj, err = _loads_object(raw)
    del raw
    if err is not None:
        problems.append(problem(f"{what}_invalid", rel, error=err))
        return True, None, st.st_size
    return True, obj, st.st_size


def _loads_object(raw: bytes) -> tuple[Any, str | None]:
    """``(dict, None)`` or ``(None, why)`` for JSON text that must be an object."""
    try:
        obj = json.loads(raw)
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as exc:
        return None, (f"{getattr(exc, 'msg', exc)} (line {getattr(exc, 'lineno', '?')}, "
                      f"column {getattr(exc, 'colno', '?')})")
    if not isinstance(obj, dict):
        return None, f"top level is a JSON {type(obj).__name__}, not an object"
    return obj, None


# ------------------------------------------------------------------------------------------
# the scan
# ------------------------------------------------------------------------------------------
def scan_checkpoint(model_dir: str | Path, *, repo: str | None = None, repo_source: str | None = None,
                    deep: bool = False, manifest: str | Path | None = None, jobs: int | None = None,
                    sample: bool | int = False, progress: Callable[[int, int], None] | None = None,
                    deadline: float | None = None, rows: TensorRows | None = None) -> dict[str, Any]:
    """Scan ``model_dir`` and return the ``model`` fact (see the module docstring); ``rows``
    receives every readable shard's tensors and makes the fact's ``inventory``."""
    # ~1M short-lived containers from json.loads would trigger repeated full GC passes
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _scan(model_dir, repo=repo, repo_source=repo_source, deep=deep, manifest=manifest, jobs=jobs,
                     sample=sample, progress=progress, deadline=deadline, rows=rows)
    finally:
        if gc_was_enabled:
            gc.enable()


def _scan(model_dir: str | Path, *, repo: str | None, repo_source: str | None, deep: bool,
          manifest: str | Path | None, jobs: int | None, sample: bool | int,
          progress: Callable[[int, int], None] | None, deadline: float | None, rows: TensorRows | None) -> dict[str, Any]:
    t0 = time.perf_counter()
    d = Path(model_dir)
    problems: list[dict] = []
    uncounted: Counter[str] = Counter()  # problems past the cap, counted only
    out: dict[str, Any] = {"schema": FACT_SCHEMA, "dir": str(d.absolute()), "exists": False,
                           "layout": "plain", "repo": repo, "repo_source": repo_source, "revision": None,
                           "cache_dir": None, "config": None, "index": None, "shards": [],
                           "totals": {}, "quant": {}, "problems": [], "problem_counts": {},
                           "incomplete": [], "inventory": None, "deep": None, "sample": None, "seconds": {}}
    if not d.exists():
        problems.append(problem("dir_missing", str(d)))
        return _finish(out, problems, t0)
    if not d.is_dir():
        problems.append(problem("dir_not_directory", str(d)))
        return _finish(out, problems, t0)
    out["exists"] = True
    lay = _layout.detect_layout(d)
    out.update(layout=lay["layout"], revision=lay["revision"], cache_dir=lay["cache_dir"])
    if not repo and lay.get("repo"):
        out.update(repo=lay["repo"], repo_source="hf-cache-path")

    # config.json (tiny): first, so shard workers know the expected quantised shapes
    cfg_present, config, _ = _read_json(d / _CONFIG, "config", problems)
    if not cfg_present:
        problems.append(problem("config_missing", _CONFIG))
    exp = expectations(config) if config is not None else {}
    out["config"] = {"present": cfg_present, "error": None if config is not None else
                     ("missing" if not cfg_present else "invalid")}
    out["config"].update({k: v for k, v in exp.items() if k != "expert_shapes"})

    try:
        with os.scandir(d) as it:
            dir_shards = sorted(e.name for e in it if e.name.endswith(".safetensors"))
    except OSError as exc:
        problems.append(problem("dir_unreadable", str(d), error=exc.strerror or str(exc)))
        return _finish(out, problems, t0)

    index_path = d / INDEX_FILE
    index_box: dict[str, Any] = {}

    def load_index(parse: Callable[[bytes], Any]) -> Any:
        t = time.perf_counter()
        index_box["v"] = _read_json(index_path, "index", problems, parse)
        out["seconds"]["index"] = round(time.perf_counter() - t, 4)
        return index_box["v"]

    t1 = time.perf_counter()
    results, (idx_present, index, idx_size), matcher = scan_shards(d, dir_shards, exp, load_index, rows)
    out["seconds"]["shards"] = round(time.perf_counter() - t1, 4)

    total_size = None
    if index is not None:
        meta = index.get("metadata")
        if matcher is None:
            problems.append(problem("index_invalid", INDEX_FILE, error="no \"weight_map\" object of tensor -> file"))
        if isinstance(meta, dict) and isinstance(meta.get("total_size"), (int, float)):
            total_size = int(meta["total_size"])
    out["index"] = {"present": idx_present, "error": None if (index is not None or not idx_present) else "invalid",
                    "size": idx_size, "total_size": total_size,
                    "tensors": matcher.tensors if matcher is not None else None,
                    "shards": len(matcher.counts) if matcher is not None else None}

    names_by_file: dict[str, Sequence[str]] = {}
    layers: Counter[str] = Counter()
    layer_files: dict[str, set[str]] = {}
    qtot: Counter[str] = Counter()
    for summary, probs, qstats, names in results:
        out["shards"].append(summary)
        problems.extend(probs)
        if names is not None:
            names_by_file[summary["file"]] = names
        for lay_name, n in (qstats.get("expert_layers") or {}).items():
            layers[lay_name] += n
            layer_files.setdefault(lay_name, set()).add(summary["file"])
        for k in ("packed", "fp8", "blocks"):
            qtot[k] += qstats.get(k, 0)

    _library_verdicts(d, problems)

    # index <-> shards
    t2 = time.perf_counter()
    present = set(dir_shards)
    if matcher is not None:
        _cross_check(names_by_file, present, problems, matcher, uncounted)
    elif len(dir_shards) > 1 and not idx_present:
        problems.append(problem("index_missing", INDEX_FILE, shards=len(dir_shards)))
    else:
        _duplicates_without_index(names_by_file, problems, uncounted)

    # a quantised pair may straddle two shards: only a partner absent everywhere is a problem
    # (a verified index, matcher.wm None, holds exactly the shards' names)
    if any(p["kind"] == "quant_pair_missing" for p in problems):
        known: Any = matcher.wm if matcher is not None and matcher.wm is not None else \
            {n for v in names_by_file.values() for n in v}
        problems[:] = [p for p in problems if not (p["kind"] == "quant_pair_missing" and p.get("missing") in known)]

    out["seconds"]["cross_check"] = round(time.perf_counter() - t2, 4)
    data_total = sum(s["data_bytes"] for s in out["shards"])
    all_ok = all(s["ok"] for s in out["shards"]) and names_by_file.keys() >= (set(matcher.counts) if matcher else set())
    if total_size is not None and all_ok and total_size != data_total:
        problems.append(problem("total_size_mismatch", INDEX_FILE, total_size=total_size, data_bytes=data_total,
                                difference=total_size - data_total))
    out["totals"] = {"shards": len(out["shards"]), "shards_ok": sum(1 for s in out["shards"] if s["ok"]),
                     "tensors": sum(s["tensors"] for s in out["shards"]), "data_bytes": data_total,
                     "file_bytes": sum(s["size"] or 0 for s in out["shards"])}

    # config-level expectations
    if config is not None:
        _config_checks(exp, layers, layer_files, qtot, names_by_file, problems, bool(out["shards"]))
    # the memory planner's inventory, from the same parse (the rows sink folded them)
    if rows is not None:
        out["inventory"] = rows.finish(config)
    per_layer = list(layers.values())
    out["quant"] = {"packed": qtot["packed"], "fp8": qtot["fp8"], "blocks": qtot["blocks"],
                    "expert_layers": len(layers),
                    "experts_per_layer": {"min": min(per_layer), "max": max(per_layer)} if per_layer else None}
    if not dir_shards and matcher is None:
        problems.append(problem("no_shards", str(d)))

    out["incomplete"] = _layout.incomplete_parts(d, lay)
    for part in out["incomplete"]:
        problems.append(problem("incomplete_download", part.get("file") or os.path.basename(part["path"]),
                                path=part["path"], size=part["size"]))

    if deep or manifest:
        t = time.perf_counter()
        out["deep"] = _deep(d, lay, out, dir_shards, manifest, jobs, progress, deadline, problems)
        out["seconds"]["deep"] = round(time.perf_counter() - t, 4)
    if sample:
        t = time.perf_counter()
        out["sample"] = _sample(d, out["shards"], 8 if sample is True else int(sample), problems)
        out["seconds"]["sample"] = round(time.perf_counter() - t, 4)
    return _finish(out, problems, t0, uncounted)


#: kinds the safetensors library itself refuses at open; its own error text is added as evidence
_LIB_KINDS = frozenset({"too_small", "lfs_pointer", "header_too_large", "header_beyond_file", "header_not_utf8",
                        "header_invalid_json", "header_not_object", "bad_entry", "unknown_dtype", "shape_mismatch",
                        "misaligned", "offsets_reversed", "offsets_overlap", "offsets_gap", "truncated",
                        "trailing_bytes"})


def safetensors_verdict(path: str | Path) -> str | None:
    """The safetensors library's own error for ``path`` (None when it opens the file, or when the
    library is unavailable). Only called for files k3doctor already found broken."""
    try:
        from safetensors import safe_open
    except Exception:  # noqa: BLE001 - optional dependency
        return None
    try:
        with safe_open(str(path), framework="np"):
            return None
    except Exception as exc:  # noqa: BLE001 - any library error is the verdict
        return f"{type(exc).__name__}: {exc}"[:300]


def _library_verdicts(d: Path, problems: list[dict], limit: int = 10) -> None:
    files = sorted({p["file"] for p in problems if p["kind"] in _LIB_KINDS})[:limit]
    for f in files:
        verdict = safetensors_verdict(d / f)
        if verdict:
            for p in problems:
                if p["file"] == f and p["kind"] in _LIB_KINDS:
                    p["safetensors_error"] = verdict


def _finish(out: dict[str, Any], problems: list[dict], t0: float, uncounted: Counter[str] | None = None) -> dict[str, Any]:
    counts: Counter[str] = Counter()
    kept: list[dict] = []
    for p in problems:
        counts[p["kind"]] += 1
        if counts[p["kind"]] <= PROBLEM_CAP:
            kept.append(p)
    if uncounted:
        counts.update(uncounted)
    out["problems"] = kept
    out["problem_counts"] = dict(sorted(counts.items()))
    out["seconds"]["total"] = round(time.perf_counter() - t0, 4)
    return out


class _Capped:
    """Appends problems of the index cross-check to ``problems`` up to :data:`PROBLEM_CAP` per kind
    and only counts the rest in ``uncounted`` (the fact keeps no more than that anyway): an index of
    600,000 entries that all disagree with the shards costs a counter, not 600,000 dicts."""

    def __init__(self, problems: list[dict], uncounted: Counter[str]) -> None:
        self.problems, self.uncounted = problems, uncounted
        self.made: Counter[str] = Counter(p["kind"] for p in problems)

    def add(self, kind: str, file: str, tensor: str | None = None, **detail: Any) -> None:
        if self.made[kind] < PROBLEM_CAP:
            self.made[kind] += 1
            self.problems.append(problem(kind, file, tensor, **detail))
        else:
            self.uncounted[kind] += 1

    def first_sorted(self, kind: str, names: Iterable[str]) -> list[str]:
        """The names that get a problem of ``kind`` in sorted order (the first ones kept), the
        others counted."""
        names = list(names)
        room = max(0, PROBLEM_CAP - self.made[kind])
        if len(names) > room:
            self.uncounted[kind] += len(names) - room
            return heapq.nsmallest(room, names)
        return sorted(names)


def _cross_check(names_by_file: dict[str, Sequence[str]], present: set[str],
                 problems: list[dict], matcher: IndexMatcher, uncounted: Counter[str]) -> None:
    counts = matcher.counts
    out = _Capped(problems, uncounted)
    for f in out.first_sorted("index_shard_missing", (f for f in counts if f not in present)):
        out.add("index_shard_missing", f, tensors=counts[f])
    for f in out.first_sorted("shard_not_in_index", present - counts.keys()):
        out.add("shard_not_in_index", f, tensors=len(names_by_file.get(f, ())))
    suspect, wm = matcher.suspect, matcher.wm
    if not suspect or wm is None:
        return
    # slow path (only when something disagrees): who holds what
    where: dict[str, list[str]] = {}
    for f, names in names_by_file.items():
        for n in names:
            where.setdefault(n, []).append(f)
    reported: set[tuple[str, str]] = set()
    for n, fs in where.items():
        if len(fs) > 1:
            out.add("tensor_duplicate", fs[0], n, files=", ".join(sorted(fs)), index_file=wm.get(n))
            reported.add((n, "dup"))
    for f in sorted(suspect):
        for n in names_by_file[f]:
            g = wm.get(n)
            if g == f or (n, "dup") in reported:
                continue
            if g is None:
                out.add("tensor_not_in_index", f, n)
            else:
                out.add("index_tensor_elsewhere", f, n, index_file=g)
                reported.add((n, "else"))
    for n, f in wm.items():
        if f in names_by_file and n not in where:
            out.add("index_tensor_absent", f, n)


def _duplicates_without_index(names_by_file: dict[str, Sequence[str]], problems: list[dict],
                              uncounted: Counter[str]) -> None:
    total = sum(len(v) for v in names_by_file.values())
    seen: dict[str, str] = {}
    if len({n for v in names_by_file.values() for n in v}) == total:
        return
    out = _Capped(problems, uncounted)
    for f, names in names_by_file.items():
        for n in names:
            if n in seen:
                out.add("tensor_duplicate", seen[n], n, files=f"{seen[n]}, {f}", index_file=None)
            else:
                seen[n] = f


def _config_checks(exp: dict[str, Any], layers: Counter[str], layer_files: dict[str, set[str]], qtot: Counter,
                   names_by_file: dict[str, Sequence[str]], problems: list[dict], have_shards: bool) -> None:
    if exp.get("family") is None:
        problems.append(problem("arch_unknown", _CONFIG, architecture=exp.get("architecture"),
                                model_type=exp.get("model_type")))
    E = exp.get("num_experts")
    if E and layers:
        counts = Counter(layers.values())
        if len(counts) == 1 and E not in counts:
            (c,) = counts
            problems.append(problem("expert_count_config", _CONFIG, num_experts=E, found_per_layer=c,
                                    layers=len(layers)))
        else:
            for lay_name, n in sorted(layers.items()):
                if n == E:
                    continue
                files = sorted(layer_files.get(lay_name, ()))
                missing = _missing_experts(lay_name, E, files, names_by_file)
                problems.append(problem("expert_count_layer", files[0] if files else _CONFIG, lay_name,
                                        num_experts=E, found=n, files=", ".join(files),
                                        missing_ids=",".join(map(str, missing[:20]))))
    method, fp4 = exp.get("quant_method"), exp.get("fp4")
    if have_shards and names_by_file:
        if method == "fp8" and exp.get("block") and qtot["fp8"] == 0:
            problems.append(problem("quant_missing", _CONFIG, quant_method=method, expected="weight_scale_inv F32 + F8_E4M3 weights"))
        elif fp4 and qtot["packed"] == 0 and qtot["blocks"] == 0:
            problems.append(problem("quant_missing", _CONFIG, quant_method=method or "", quant_format=exp.get("quant_format") or "",
                                    expected="U8 *.weight_packed + *.weight_scale (or *_blocks + *_scales)"))
        elif not method and (qtot["packed"] or qtot["blocks"] or qtot["fp8"]):
            problems.append(problem("quant_undeclared", _CONFIG, packed=qtot["packed"], blocks=qtot["blocks"],
                                    fp8=qtot["fp8"]))


def _missing_experts(layer: str, E: int, files: list[str], names_by_file: dict[str, Sequence[str]]) -> list[int]:
    pat = re.compile(re.escape(layer) + r"\.experts\.(\d+)\.")
    found: set[int] = set()
    for f in files:
        for n in names_by_file.get(f, ()):
            m = pat.match(n)
            if m:
                found.add(int(m.group(1)))
    return sorted(set(range(E)) - found)


# ------------------------------------------------------------------------------------------
# deep verification and sampling
# ------------------------------------------------------------------------------------------
def _regular_files(d: Path) -> list[str]:
    out = []
    try:
        with os.scandir(d) as it:
            for e in it:
                if e.name.startswith(".") or e.name.endswith((".incomplete", ".lock")):
                    continue
                try:
                    if e.is_file():  # follows symlinks (hub cache snapshots)
                        out.append(e.name)
                except OSError:
                    continue
    except OSError:
        pass
    return sorted(out)


def _deep(d: Path, lay: dict, out: dict, dir_shards: list[str], manifest: str | Path | None, jobs: int | None,
          progress: Callable[[int, int], None] | None, deadline: float | None, problems: list[dict]) -> dict:
    from .manifest import ManifestError, load_manifest

    info: dict[str, Any] = {"source": None, "files": 0, "verified": 0, "mismatched": 0, "unverified": [],
                            "bytes": 0, "seconds": 0.0, "jobs": None, "manifest": None}
    expected: dict[str, dict[str, Any]] = {}
    if manifest:
        info["source"] = "manifest"
        info["manifest"] = str(manifest)
        try:
            doc = load_manifest(manifest)
        except ManifestError as exc:
            problems.append(problem("manifest_invalid", os.path.basename(str(manifest)), error=str(exc),
                                    path=str(manifest)))
            return info
        mrepo = doc.get("repo")
        if mrepo and out.get("repo") and mrepo != out["repo"]:
            problems.append(problem("manifest_repo_mismatch", os.path.basename(str(manifest)),
                                    manifest_repo=mrepo, repo=out["repo"], path=str(manifest)))
        for f, rec in doc["files"].items():
            p = d / f
            try:
                size = os.stat(p).st_size
            except OSError:
                problems.append(problem("manifest_file_missing", f, expected_size=rec["size"]))
                continue
            if size != rec["size"]:
                problems.append(problem("size_mismatch", f, size=size, expected_size=rec["size"],
                                        source="manifest"))
                continue
            expected[f] = {"algo": "sha256", "expected": rec["sha256"], "source": "manifest", "stale": False}
        for f in dir_shards:
            if f not in doc["files"]:
                problems.append(problem("manifest_extra", f))
    else:
        files = _regular_files(d)
        expected = _layout.recorded_hashes(d, lay, files)
        info["source"] = {"hf_cache": "hf-cache-blob", "hf_local_dir": "hf-local-metadata"}.get(lay["layout"])
        unverified = [f for f in dir_shards if f not in expected and os.path.isfile(d / f)]
        if unverified:
            info["unverified"] = unverified[:200]
            problems.append(problem("no_hash_source", unverified[0], files=len(unverified), layout=lay["layout"]))
    hjobs = []
    for f, rec in sorted(expected.items()):
        try:
            size = os.stat(d / f).st_size
        except OSError:
            continue
        hjobs.append(HashJob(str(d / f), f, rec["algo"], size))
    workers = jobs or os.cpu_count() or 1
    info["jobs"] = workers
    t = time.perf_counter()
    results = hash_files(hjobs, workers=workers, progress=progress, deadline=deadline)
    info["seconds"] = round(time.perf_counter() - t, 4)
    info["files"] = len(hjobs)
    for r in results:
        rec = expected[r["file"]]
        info["bytes"] += r.get("bytes", 0)
        if "error" in r:
            problems.append(problem("hash_error", r["file"], error=r["error"], read_bytes=r.get("bytes", 0)))
            continue
        if r["actual"] != rec["expected"]:
            info["mismatched"] += 1
            problems.append(problem("hash_mismatch", r["file"], algo=rec["algo"], expected=rec["expected"],
                                    actual=r["actual"], source=rec["source"], stale_metadata=rec["stale"]))
        else:
            info["verified"] += 1
    info["rate"] = int(info["bytes"] / info["seconds"]) if info["seconds"] else None
    return info


def _sample(d: Path, shards: list[dict], ranges: int, problems: list[dict]) -> dict:
    seed = random.SystemRandom().randrange(1 << 32)
    info = {"seed": seed, "ranges_per_shard": ranges, "shards": 0, "read_bytes": 0, "zero_ranges": 0, "holes": 0}
    for k, s in enumerate(shards):
        if not s["ok"] or s["header_len"] is None:
            continue
        start = 8 + s["header_len"]
        r = sample_file(str(d / s["file"]), start, ranges=ranges, seed=seed + k)
        info["shards"] += 1
        info["read_bytes"] += r["read_bytes"]
        if r.get("error"):
            problems.append(problem("sample_error", s["file"], error=r["error"]))
            continue
        if not r["zero"] and not r["holes"]:
            continue
        spans = _spans(d / s["file"], s["file"])
        holes = r["holes"]
        # zero ranges inside a reported sparse hole are the same problem
        zeros = [z for z in r["zero"] if not any(h0 <= z[0] < h1 for h0, h1 in holes)]
        if holes:
            info["holes"] += len(holes)
            b, e = holes[0]
            problems.append(problem("sparse_hole", s["file"], _tensor_at(spans, b - start), begin=b, end=e,
                                    bytes=e - b, holes=len(holes), hole_bytes=sum(h1 - h0 for h0, h1 in holes)))
        if zeros:
            info["zero_ranges"] += len(zeros)
            b, e = zeros[0]
            problems.append(problem("zero_range", s["file"], _tensor_at(spans, b - start), begin=b, end=e,
                                    bytes=e - b, zero_ranges=len(zeros), ranges=r["ranges"]))
    return info


def _spans(path: Path, file: str) -> list[tuple[int, int, str]]:
    """Offsets of one shard (re-read only on the failure path of sampling)."""
    res = read_header(str(path), file, validate=False)
    if res.header is None:
        return []
    spans = []
    for n, i in res.header.items():
        if n != "__metadata__" and isinstance(i, dict):
            try:
                b, e = i["data_offsets"]
                spans.append((int(b), int(e), n))
            except (KeyError, TypeError, ValueError):
                continue
    spans.sort()
    return spans


def _tensor_at(spans: Iterable[tuple[int, int, str]], rel: int) -> str | None:
    for b, e, n in spans:
        if b <= rel < e:
            return n
    return None
