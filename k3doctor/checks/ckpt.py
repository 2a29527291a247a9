"""CKPT family: safetensors checkpoint integrity, from the ``model`` fact (k3doctor/probes/checkpoint.py).

Every finding names the file (and tensor when one is to blame) and carries the exact command that
repairs that one file: ``hf download <repo> <file> --local-dir <dir> --force-download`` for a
``local_dir`` download, the same with ``--revision <commit> [--cache-dir …]`` for a hub-cache
snapshot, or a re-copy from the download node when the files came another way.
"""

from __future__ import annotations

import shlex
from typing import Any, Callable, ClassVar, Iterable, Mapping

from ..check import Check, module_checks
from ..facttypes import ModelFact
from ..model import Finding, Severity

__all__ = ["CHECKS", "refetch_command", "CKPT001", "CKPT002", "CKPT003", "CKPT004", "CKPT005", "CKPT006",
           "CKPT007", "CKPT008", "CKPT009", "CKPT010"]

_E, _W = Severity.ERROR, Severity.WARNING
_PLACEHOLDER = "<repo-id>"


def _q(s: Any) -> str:
    return shlex.quote(str(s))


def refetch_command(model: Mapping[str, Any], file: str) -> str:
    """The command that re-downloads exactly ``file`` into this checkpoint's layout."""
    repo = model.get("repo") or _PLACEHOLDER
    d = model.get("dir") or "DIR"
    rev = model.get("revision")
    if model.get("layout") == "hf_cache":
        cmd = f"hf download {repo} {_q(file)} --force-download"
        if rev:
            cmd += f" --revision {rev}"
        if model.get("cache_dir"):
            cmd += f" --cache-dir {_q(model['cache_dir'])}"
    else:
        cmd = f"hf download {repo} {_q(file)} --local-dir {_q(d)} --force-download"
        if rev and model.get("layout") == "hf_local_dir":
            cmd += f" --revision {rev}"
    if repo == _PLACEHOLDER:
        cmd += (f"  (replace {_PLACEHOLDER} with the Hugging Face repo id, e.g. moonshotai/Kimi-K3, or rerun with "
                f"--hf-repo ORG/NAME; on an air-gapped node re-copy it from the download node instead: "
                f"rsync -a --checksum DOWNLOAD_HOST:{_q(str(d) + '/' + file)} {_q(d)}/)")
    return cmd


def _scanned(m: Any) -> ModelFact:
    if not isinstance(m, Mapping) or "problems" not in m:
        raise Check.skip("the model fact has no scan result")
    return ModelFact.of(m)


def _subject(p: Mapping[str, Any]) -> str:
    s = f"file={p.get('file')}"
    if p.get("tensor"):
        s += f" tensor={p['tensor']}"
    return s


def _evidence(p: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in p.items() if k != "kind" and (v is None or isinstance(v, (int, float, str, bool)))}


def _t(p: Mapping[str, Any]) -> str:
    return f" tensor `{p['tensor']}`" if p.get("tensor") else ""


def _cannot_read(p: Mapping[str, Any]) -> str:
    """The message of every unreadable-file kind (shard, ``config.json``, the index)."""
    return f"`{p['file']}` cannot be read: {p.get('error')}"


Msg = Callable[[Mapping[str, Any]], str]


class _CkptCheck(Check):
    """Base for CKPT checks (not registered)."""

    _abstract = True
    #: problem kind -> (severity, message(problem), fix(model, problem) or None = re-download the file)
    kinds: ClassVar[dict[str, tuple[Severity, Msg, Callable[[Mapping[str, Any], Mapping[str, Any]], str] | None]]] = {}

    def precondition(self, model: Mapping[str, Any]) -> None:
        """Raise Skip when this check does not apply."""
        if not model.get("exists"):
            raise self.skip("the model directory does not exist (see CKPT001)")

    def run(self, model: ModelFact) -> Iterable[Finding]:
        model = _scanned(model)
        self.precondition(model)
        counts = model.get("problem_counts") or {}
        shown: dict[str, int] = {}
        for p in model.problems:
            spec = self.kinds.get(str(p.get("kind")))
            if spec is None:
                continue
            sev, msg, fix = spec
            shown[p["kind"]] = shown.get(p["kind"], 0) + 1
            text = msg(p)
            if p.get("count", 1) > 1:
                text += f" ({p['count']} tensors of this kind)"
            yield self.finding(text, subject=_subject(p), evidence=_evidence(p), severity=sev,
                               fix=fix(model, p) if fix else refetch_command(model, p["file"]))
        for kind, n in shown.items():
            more = int(counts.get(kind, n)) - n
            if more > 0:
                sev = self.kinds[kind][0]
                yield self.finding(f"{more} more `{kind}` problems not listed (the scan keeps the first {n})",
                                   subject=f"kind={kind}", evidence={"kind": kind, "not_listed": more}, severity=sev,
                                   fix=f"k3doctor check --model {_q(model.get('dir'))} --format json "
                                       "lists them all after the listed ones are fixed")


# ----------------------------------------------------------------------------------------------
class CKPT001(_CkptCheck):
    """Model directory exists and holds safetensors shards

    ## What it checks
    The directory given with `--model` (or the local `--model-path` of the launch command) exists,
    is a directory, can be listed, and contains `*.safetensors` files or an index naming them.

    ## Why it matters
    A typo in the path, a mount that is missing on one node, or a download that never started is
    only discovered when the engine begins loading — after NCCL init and minutes of start-up.

    ## How to fix
    Point `--model` at the directory holding `config.json` and the shards, or download it:
    `hf download ORG/NAME --local-dir DIR`.
    """

    kinds = {
        "dir_missing": (_E, lambda p: f"model directory `{p['file']}` does not exist", None),
        "dir_not_directory": (_E, lambda p: f"`{p['file']}` is a file, not a model directory", None),
        "dir_unreadable": (_E, lambda p: f"cannot list model directory `{p['file']}`: {p.get('error')}", None),
        "no_shards": (_E, lambda p: f"`{p['file']}` holds no *.safetensors shards and no index", None),
    }

    def precondition(self, model: Mapping[str, Any]) -> None:
        return None

    def run(self, model: ModelFact) -> Iterable[Finding]:
        model = _scanned(model)
        for f in super().run(model):
            repo = model.get("repo") or _PLACEHOLDER
            fix = (f"pass the checkpoint directory with --model DIR (the one holding config.json), or download it: "
                   f"hf download {repo} --local-dir {_q(model.get('dir'))}")
            yield Finding(code=f.code, severity=f.severity, message=f.message, subject=f.subject,
                          evidence=f.evidence, fix=fix)


def _lfs_fix(m: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    return (f"the file is a git-lfs pointer, not the weights: run `git lfs pull --include {_q(p['file'])}` in the "
            f"clone, or {refetch_command(m, p['file'])}")


class CKPT002(_CkptCheck):
    """Every shard has a valid safetensors header

    ## What it checks
    For each `*.safetensors` file: at least 8 bytes; header length ≤ 100,000,000 and inside the file;
    UTF-8 JSON object; every tensor has a known dtype, a shape and `data_offsets`; offsets are
    contiguous from 0 with no overlap or gap; `end - begin == numel × dtype size`. These are the
    rules the safetensors library applies at open (its own error is added as evidence). Only the
    header is read.

    ## Why it matters
    A corrupt header makes the engine die when it reaches that shard — typically minutes into the
    weight load (Kimi-K3: 96 shards, ~11 min), on every rank that opens the file. Git-LFS pointer
    files (`version https://git-lfs…`) show up as a "header too large" error.

    ## How to fix
    Re-download exactly that file (the finding prints the command, e.g.
    `hf download moonshotai/Kimi-K3 model-00042-of-000096.safetensors --local-dir DIR --force-download`)
    or re-copy it from the download node.
    """

    kinds = {
        "empty_file": (_E, lambda p: f"shard `{p['file']}` is empty (0 bytes)", None),
        "too_small": (_E, lambda p: f"shard `{p['file']}` has {p.get('size')} bytes, fewer than the 8-byte header length", None),
        "lfs_pointer": (_E, lambda p: f"shard `{p['file']}` is a git-lfs pointer file ({p.get('size')} bytes), not tensor data", _lfs_fix),
        "header_too_large": (_E, lambda p: f"shard `{p['file']}` declares a {p.get('header_len')}-byte header, above the safetensors limit of {p.get('limit')}", None),
        "header_beyond_file": (_E, lambda p: f"shard `{p['file']}` declares a {p.get('header_len')}-byte header but the file has only {p.get('size')} bytes", None),
        "header_not_utf8": (_E, lambda p: f"shard `{p['file']}`: header is not UTF-8 (first bad byte at file offset {p.get('offset')})", None),
        "header_invalid_json": (_E, lambda p: f"shard `{p['file']}`: header is not valid JSON ({p.get('error')}, file offset {p.get('offset')})", None),
        "header_not_object": (_E, lambda p: f"shard `{p['file']}`: header is a JSON {p.get('json_type')}, not an object", None),
        "bad_entry": (_E, lambda p: f"shard `{p['file']}`:{_t(p)} has a malformed header entry {p.get('entry')}", None),
        "unknown_dtype": (_E, lambda p: f"shard `{p['file']}`:{_t(p)} has unknown dtype `{p.get('dtype')}`", None),
        "shape_mismatch": (_E, lambda p: f"shard `{p['file']}`:{_t(p)} {p.get('dtype')}{p.get('shape')} needs {p.get('expected_bytes')} bytes but its data_offsets span {p.get('span_bytes')}", None),
        "misaligned": (_E, lambda p: f"shard `{p['file']}`:{_t(p)} {p.get('dtype')}{p.get('shape')} is {p.get('bits')} bits, not a whole number of bytes", None),
        "offsets_reversed": (_E, lambda p: f"shard `{p['file']}`:{_t(p)} has data_offsets [{p.get('begin')}, {p.get('end')}] with end before begin", None),
        "offsets_overlap": (_E, lambda p: f"shard `{p['file']}`:{_t(p)} starts at {p.get('begin')}, {p.get('overlap_bytes')} bytes inside `{p.get('other_tensor')}`", None),
        "offsets_gap": (_E, lambda p: f"shard `{p['file']}`: {p.get('gap_bytes')} unaccounted bytes [{p.get('gap_begin')}, {p.get('gap_end')}) before{_t(p)}", None),
        "bad_metadata": (_W, lambda p: f"shard `{p['file']}`: __metadata__ is not a string-to-string map", None),
    }


class CKPT003(_CkptCheck):
    """Shard file sizes match their headers (no truncated or padded shards)

    ## What it checks
    `8 + header length + end of the last tensor` must equal the file size: smaller means the
    download or copy stopped early (the tensors past the end are named); larger means trailing
    garbage (safetensors refuses both: `MetadataIncompleteBuffer`).

    ## Why it matters
    Truncated shards are the most common failure of a 1.5 TB download; the engine finds them only
    when it reaches that file.

    ## How to fix
    Re-download (or re-copy) the named file; the finding prints the exact command.
    """

    kinds = {
        "truncated": (_E, lambda p: f"shard `{p['file']}` is truncated: {p.get('size')} bytes, header needs {p.get('expected_size')} ({p.get('missing_bytes')} missing; first tensor cut:{_t(p) or ' ?'})", None),
        "trailing_bytes": (_E, lambda p: f"shard `{p['file']}` has {p.get('extra_bytes')} bytes after the last tensor ({p.get('size')} vs {p.get('expected_size')})", None),
    }


class CKPT004(_CkptCheck):
    """Shard and index paths are readable regular files

    ## What it checks
    Every `*.safetensors` entry (and `config.json`, the index) can be opened for reading: not a
    directory, not a dangling symlink (a hub-cache snapshot whose blob is gone), not unreadable
    for this user.

    ## Why it matters
    Each rank opens the files itself; a permission or symlink problem on one node fails that node
    only, late in the start-up.

    ## How to fix
    Re-download the file (the finding prints the command); for permissions,
    `chmod a+r FILE` on the file (and `a+x` on its directories).
    """

    kinds = {
        "is_directory": (_E, lambda p: f"`{p['file']}` is a directory, not a shard file", None),
        "dangling_symlink": (_E, lambda p: f"`{p['file']}` is a symlink to `{p.get('target')}`, which does not exist", None),
        "unreadable": (_E, _cannot_read,
                       lambda m, p: f"chmod a+r {_q(str(m.get('dir')) + '/' + p['file'])}  (and check the owner), or {refetch_command(m, p['file'])}"),
        "not_regular": (_E, lambda p: f"`{p['file']}` is not a regular file (mode {p.get('mode')})", None),
        "not_found": (_E, lambda p: f"`{p['file']}` disappeared while scanning", None),
        "io_error": (_E, lambda p: f"`{p['file']}`: I/O error {p.get('error')}", None),
        "config_unreadable": (_E, _cannot_read, None),
        "index_unreadable": (_E, _cannot_read, None),
    }


class CKPT005(_CkptCheck):
    """The index and the shards agree (every tensor in exactly one listed shard)

    ## What it checks
    `model.safetensors.index.json` parses; every shard it names exists; every shard present is
    named; every tensor the index maps to a shard is in that shard's header and nowhere else;
    no tensor is in two shards; `metadata.total_size` equals the sum of the tensors' bytes.

    ## Why it matters
    Loaders iterate the index: a missing shard or a tensor in the wrong file fails (or silently
    leaves a parameter uninitialised) only when that layer is loaded.

    ## How to fix
    Re-download the named shard, or the index (`model.safetensors.index.json`) when the shards are
    right and the index is stale; remove shards left over from another revision.
    """

    kinds = {
        "index_missing": (_E, lambda p: f"{p.get('shards')} shards but no `model.safetensors.index.json`", None),
        "index_invalid": (_E, lambda p: f"`{p['file']}` is not a valid index: {p.get('error')}", None),
        "index_shard_missing": (_E, lambda p: f"shard `{p['file']}` is named by the index ({p.get('tensors')} tensors) but is missing", None),
        "shard_not_in_index": (_E, lambda p: f"shard `{p['file']}` ({p.get('tensors')} tensors) is not named by the index — left over from another revision?",
                               lambda m, p: f"mv {_q(str(m.get('dir')) + '/' + p['file'])} /some/other/place/  (engines load every *.safetensors file in the directory), or re-download the index: {refetch_command(m, 'model.safetensors.index.json')}"),
        "index_tensor_absent": (_E, lambda p: f"index maps{_t(p)} to `{p['file']}`, but that shard does not contain it", None),
        "index_tensor_elsewhere": (_E, lambda p: f"index maps{_t(p)} to `{p.get('index_file')}`, but it is in `{p['file']}`",
                                   lambda m, p: refetch_command(m, "model.safetensors.index.json") + f"  (if the index is right, re-download {p['file']} and {p.get('index_file')})"),
        "tensor_duplicate": (_E, lambda p: f"tensor `{p.get('tensor')}` is stored in several shards: {p.get('files')}", None),
        "tensor_not_in_index": (_E, lambda p: f"shard `{p['file']}` holds{_t(p)}, which the index does not list", None),
        "total_size_mismatch": (_W, lambda p: f"index metadata.total_size is {p.get('total_size')} but the shards hold {p.get('data_bytes')} tensor bytes (difference {p.get('difference')})", None),
    }


class CKPT006(_CkptCheck):
    """config.json is present, valid and names an architecture k3doctor knows

    ## What it checks
    `config.json` exists and is a JSON object; its top-level `architectures[0]` (Kimi-K3:
    `KimiK3ForConditionalGeneration`; the LM config lives in `text_config`) is one k3doctor knows
    the tensor layout of (Kimi-K3, DeepSeek-V3/R1, Kimi-K2, gpt-oss, Qwen3-MoE, …). The file is
    parsed as data; no `auto_map` code is imported.

    ## Why it matters
    Engines route on the top-level architecture; a missing or broken config fails at start, an
    unknown architecture means the quantisation/expert checks below cannot run.

    ## How to fix
    Re-download `config.json` (the finding prints the command). For an unknown architecture, check
    that the directory is the model you meant to serve.
    """

    kinds = {
        "config_missing": (_E, lambda p: "`config.json` is missing", None),
        "config_invalid": (_E, lambda p: f"`config.json` is not valid: {p.get('error')}", None),
        "arch_unknown": (_W, lambda p: f"architecture `{p.get('architecture')}` (model_type `{p.get('model_type')}`) is not one k3doctor knows; quantisation checks are limited",
                         lambda m, p: ("check that --model points at the intended checkpoint; if config.json was replaced, "
                                      f"{refetch_command(m, 'config.json')}; if both are right, --ignore CKPT006")),
    }


class CKPT007(_CkptCheck):
    """Quantised tensors and expert counts match config.json

    ## What it checks
    - Every packed FP4 weight has its scale: compressed-tensors `X.weight_packed` (U8
      `[out, in/2]`) + `X.weight_scale` (`[out, in/32]` E8M0 for MXFP4, `[out, in/16]` F8_E4M3 for
      NVFP4); gpt-oss `X_blocks` U8 `[E, out, in/32, 16]` + `X_scales` `[E, out, in/32]`;
      DeepSeek-V3 FP8 `X.weight` F8_E4M3 + `X.weight_scale_inv` F32 `[ceil(out/128), ceil(in/128)]`.
    - Expert weights have the config's dims (Kimi-K3: w1/w3 logical `[3072, 3584]`, w2
      `[3584, 3072]`, i.e. packed `[3072, 1792]` / `[3584, 1536]`).
    - Every MoE layer has `num_experts` (`n_routed_experts`, `num_local_experts`) experts.
    - The dtypes fit the declared `quantization_config` (and quantised tensors are declared).

    ## Why it matters
    A missing scale or a mis-shaped expert fails in the MoE weight loader or the Marlin/FlashInfer
    repack — deep into the load — or, worse, loads garbage.

    ## How to fix
    Re-download the named shard. If every layer disagrees with `config.json`, the config belongs to
    another checkpoint: re-download `config.json` for this revision.
    """

    kinds = {
        "quant_pair_missing": (_E, lambda p: f"shard `{p['file']}`:{_t(p)} has no partner `{p.get('missing')}` in any shard", None),
        "quant_shape": (_E, lambda p: f"shard `{p['file']}`:{_t(p)} has shape {p.get('shape')}, expected {p.get('expected_shape') or p.get('expected_logical')} ({p.get('why')})", None),
        "quant_dtype": (_E, lambda p: f"shard `{p['file']}`:{_t(p)} is {p.get('dtype')}, expected {p.get('expected_dtype')} ({p.get('why')})", None),
        "expert_count_config": (_E, lambda p: f"config.json says {p.get('num_experts')} experts per MoE layer but all {p.get('layers')} MoE layers have {p.get('found_per_layer')}",
                                lambda m, p: refetch_command(m, "config.json") + "  (the config belongs to another checkpoint)"),
        "expert_count_layer": (_E, lambda p: f"MoE layer `{p.get('tensor')}` has {p.get('found')} of {p.get('num_experts')} experts (in {p.get('files')}; missing ids {p.get('missing_ids') or '?'})", None),
        "quant_missing": (_E, lambda p: f"config.json declares {p.get('quant_method') or p.get('quant_format')} quantisation but no shard has {p.get('expected')}",
                          lambda m, p: refetch_command(m, "config.json") + "  (config.json and the shards come from different checkpoints)"),
        "quant_undeclared": (_W, lambda p: f"shards hold quantised tensors ({p.get('packed')} packed, {p.get('blocks')} blocks, {p.get('fp8')} FP8) but config.json has no quantization_config",
                             lambda m, p: refetch_command(m, "config.json")),
    }

    def precondition(self, model: Mapping[str, Any]) -> None:
        super().precondition(model)
        cfg = model.get("config") or {}
        if not cfg.get("present") or cfg.get("error"):
            raise self.skip("config.json is missing or invalid (see CKPT006)")


class CKPT008(_CkptCheck):
    """No partial downloads are left behind

    ## What it checks
    Looks for `*.incomplete` files: `.cache/huggingface/download/<file>.<etag>.incomplete` in a
    `local_dir` download, `blobs/<etag>.incomplete` in the hub cache.

    ## Why it matters
    A leftover part means a download was interrupted; the file it was for is often missing or
    stale, and the part wastes up to a shard (16 GB for Kimi-K3) of disk.

    ## How to fix
    Re-run the download for that file (the command is printed), then delete the part.
    """

    severity = Severity.WARNING
    kinds = {
        "incomplete_download": (_W, lambda p: f"partial download `{p.get('path')}` ({p.get('size')} bytes) for `{p['file']}`",
                                lambda m, p: f"{refetch_command(m, p['file'])} && rm -f {_q(p.get('path'))}"),
    }


class CKPT009(_CkptCheck):
    """Shard contents match their recorded sha256 (deep verification)

    ## What it checks
    With `--deep`: the sha256 of every file against the hashes recorded locally — the blob name in
    a hub cache, the etag in `.cache/huggingface/download/<file>.metadata` of a `local_dir`
    download — or, with `--manifest m.json`, against a manifest made on the download node by
    `k3doctor manifest create DIR -o m.json` (sizes are compared first, without reading).
    Files are hashed in parallel (`--jobs`) with bounded memory.

    ## Why it matters
    Headers and sizes cannot see flipped bits or a zero-filled range from a failed copy; a shard
    corrupted mid-download can pass a size check and kill the engine at ~33 % of the load, or load
    wrong weights silently.

    ## How to fix
    Re-download the file (the command is printed) or re-copy it from the download node, then rerun
    with `--deep`. Without local hashes, create a manifest on the download node and pass it with
    `--manifest` on every other node.
    """

    kinds = {
        "hash_mismatch": (_E, lambda p: f"`{p['file']}` sha256 {p.get('actual')} differs from the {p.get('source')} record {p.get('expected')}", None),
        "hash_error": (_E, lambda p: f"`{p['file']}` could not be hashed: {p.get('error')} after {p.get('read_bytes')} bytes",
                       lambda m, p: "rerun with a larger --probe-timeout (hashing 1.5 TB takes tens of minutes) and more --jobs; if the file is unreadable, " + refetch_command(m, p["file"])),
        "size_mismatch": (_E, lambda p: f"`{p['file']}` is {p.get('size')} bytes, the manifest records {p.get('expected_size')}", None),
        "manifest_file_missing": (_E, lambda p: f"`{p['file']}` is in the manifest ({p.get('expected_size')} bytes) but missing here", None),
        "manifest_extra": (_W, lambda p: f"shard `{p['file']}` is not in the manifest",
                           lambda m, p: "re-create the manifest on the download node (k3doctor manifest create DIR -o m.json) or remove the extra shard"),
        "manifest_invalid": (_E, lambda p: f"manifest unusable: {p.get('error')}",
                             lambda m, p: "re-create it on the download node: k3doctor manifest create DIR -o m.json"),
        "manifest_repo_mismatch": (_E, lambda p: f"manifest `{p.get('path')}` is for {p.get('manifest_repo')}, this checkpoint is {p.get('repo')}",
                                   lambda m, p: "pass the manifest made for this model (k3doctor manifest create DIR -o m.json on its download node)"),
        "no_hash_source": (_W, lambda p: f"{p.get('files')} shards (first: `{p['file']}`) have no locally recorded sha256 (layout {p.get('layout')}); they were not verified",
                           lambda m, p: f"on the download node: k3doctor manifest create {_q(m.get('dir'))} -o m.json; here: k3doctor check --model {_q(m.get('dir'))} --manifest m.json"),
    }

    def precondition(self, model: Mapping[str, Any]) -> None:
        super().precondition(model)
        if not model.get("deep"):
            raise self.skip("deep verification not requested (use --deep, or --manifest m.json)")


class CKPT010(_CkptCheck):
    """Sampled data ranges are not zero-filled holes

    ## What it checks
    With `--sample`: reads a few random ranges of each shard's data region (one per stratum, so any
    zero run longer than two strata is always hit) and reports ranges that are all zero, plus sparse
    holes the filesystem reports (`SEEK_HOLE`) — without reading whole files.

    ## Why it matters
    A failed or interrupted copy onto a preallocated file leaves the right size and header but
    zeros where weights should be: the engine loads it and serves garbage.

    ## How to fix
    Confirm with `--deep` (or `--manifest`) and re-download/re-copy the file (the command is printed).
    """

    severity = Severity.WARNING
    kinds = {
        "zero_range": (_W, lambda p: f"shard `{p['file']}`: {p.get('zero_ranges')} of {p.get('ranges')} sampled ranges are all zero, first [{p.get('begin')}, {p.get('end')}) in{_t(p) or ' ?'}", None),
        "sparse_hole": (_W, lambda p: f"shard `{p['file']}`: {p.get('holes')} sparse hole(s), {p.get('hole_bytes')} bytes, first [{p.get('begin')}, {p.get('end')}) in{_t(p) or ' ?'}", None),
        "sample_error": (_E, lambda p: f"shard `{p['file']}` could not be sampled: {p.get('error')}", None),
    }

    def precondition(self, model: Mapping[str, Any]) -> None:
        super().precondition(model)
        if not model.get("sample"):
            raise self.skip("sampling not requested (use --sample)")


#: this module's family: (code prefix, description shown by `k3doctor list`, display order)
FAMILY = ('CKPT', 'safetensors checkpoint integrity', 70)
CHECKS = module_checks(globals())

#: every problem kind the probe can emit, mapped to the check that reports it (tests keep this total)
KIND_TO_CHECK: dict[str, str] = {k: c.code for c in CHECKS for k in getattr(c, "kinds", ())}
