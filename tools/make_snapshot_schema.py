"""Write k3doctor/data/schemas/snapshot.schema.json: the snapshot input's JSON Schema (what
``k3doctor.schemacheck`` validates a snapshot against when it is read).

    python tools/make_snapshot_schema.py          # rewrite the file
    python tools/make_snapshot_schema.py --check  # exit 1 when the file differs (tests run this)

The fact shapes follow the probes' docstrings (k3doctor/probes/*.py, k3doctor/ckpt/scan.py); the
launch fact's fields come from :class:`k3doctor.launch.LaunchSpec` itself.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "k3doctor" / "data" / "schemas" / "snapshot.schema.json"
N = "null"
def t(*types, **kw): return {"type": list(types) + [N], **kw}
INT = {"$ref": "#/$defs/int"}; BYTES = {"$ref": "#/$defs/bytes"}; COUNT = BYTES
STR = {"$ref": "#/$defs/str"}; BOOL = {"$ref": "#/$defs/bool"}; NUM = {"$ref": "#/$defs/number"}
STRS = {"$ref": "#/$defs/strings"}; ERRS = STRS
def obj(props, extra=True, nullable=True):
    d = {"type": ["object", N] if nullable else "object", "properties": props}
    if extra is not True:
        d["additionalProperties"] = extra
    return d
def arr(items, nullable=True): return {"type": ["array", N] if nullable else "array", "items": items}

defs = {
  "int": t("integer", minimum=-(2**63), maximum=2**63 - 1),
  "bytes": t("integer", minimum=0, maximum=2**63 - 1),
  "str": t("string"), "bool": t("boolean"), "number": t("number"),
  "strings": arr({"type": "string"}),
}
gpu_device = obj({
  "index": COUNT, "name": STR, "uuid": STR,
  "cc": {"type": ["array", N], "prefixItems": [{"type": "integer", "minimum": 0, "maximum": 1000}] * 2,
         "minItems": 2, "maxItems": 2},
  "memory_total": BYTES, "memory_free": BYTES, "memory_used": BYTES, "memory_reserved": BYTES,
  "ecc_current": BOOL, "ecc_pending": BOOL, "ecc_volatile_uncorrected": COUNT, "ecc_aggregate_uncorrected": COUNT,
  "remapped_rows": obj({"correctable": COUNT, "uncorrectable": COUNT, "pending": BOOL, "failure": BOOL}),
  "persistence": BOOL, "mig_current": BOOL, "mig_pending": BOOL,
  "pcie_gen": COUNT, "pcie_max_gen": COUNT, "pcie_width": COUNT, "pcie_max_width": COUNT,
  "throttle_reasons": BYTES,
  "nvlink": obj({"supported": BOOL, "active": COUNT, "total": COUNT}),
  "fabric": obj({"state": STR, "status": INT}),
  "processes": arr(obj({"pid": COUNT, "used_memory": BYTES, "name": STR}, nullable=False)),
  "fp8": BOOL, "fp4": BOOL, "nvlink_domain": STR, "errors": ERRS,
}, nullable=False)
gpu = obj({"ok": BOOL, "error": STR, "source": STR, "driver": STR, "cuda_driver": COUNT, "nvml_version": STR,
           "target": STR, "errors": ERRS, "devices": arr(gpu_device)}, nullable=False)
host = obj({"hostname": STR, "fqdn": STR, "kernel": STR, "machine": STR, "os": STR, "python": STR,
            "cpu_count": COUNT, "mem_total": BYTES, "mem_available": BYTES, "time_unix": NUM}, nullable=False)
env = {"type": "object", "additionalProperties": {"type": "string"}}
packages = {"type": "object", "additionalProperties": {"type": ["string", N]}}
net = obj({
  "interfaces": arr(obj({"name": {"type": "string"}, "kind": STR, "operstate": STR, "carrier": INT, "mtu": COUNT,
                         "speed_mbps": INT, "type": INT, "ipv4": STRS, "ipv6": STRS}, nullable=False)),
  "infiniband": arr(obj({"hca": STR, "ports": arr(obj({"port": INT, "state": STR, "phys_state": STR,
                                                        "link_layer": STR, "rate": STR, "netdevs": STRS},
                                                       nullable=False))}, nullable=False)),
  "errors": ERRS,
  "hostname": obj({"name": STR, "addresses": STRS, "loopback": BOOL, "error": STR}),
}, nullable=False)
rendezvous = obj({"addr": STR, "host": STR, "port": {"type": ["integer", N], "minimum": 0, "maximum": 65535},
                  "resolved": STRS, "loopback": BOOL, "source_ip": STR, "interface": STR, "reachable": BOOL,
                  "bindable": BOOL, "error": STR, "role": STR, "node_rank": COUNT, "side": STR,
                  "error_kind": STR}, nullable=False)
mounts = obj({"source": STR, "errors": ERRS,
              "mounts": arr(obj({"mount_id": INT, "parent_id": INT, "dev": STR, "root": STR, "mount_point": STR,
                                 "options": STR, "optional": STRS, "fstype": STR, "source": STR,
                                 "super_options": STR}, nullable=False))}, nullable=False)
paths = obj({"engine": STR, "env_source": STR, "errors": ERRS,
             "entries": arr(obj({"key": STR, "label": STR, "path": STR, "variable": STR, "explicit": BOOL,
                                 "source": STR, "jit": BOOL, "subdir": STR, "note": STR, "realpath": STR,
                                 "checked_path": STR, "exists": BOOL, "mount_point": STR, "fstype": STR,
                                 "fs_class": STR, "mount_source": STR, "writable": BOOL, "free_bytes": BYTES,
                                 "total_bytes": BYTES, "error": STR}, nullable=False)),
             "load_estimate": obj({"file": STR, "offset": BYTES, "bytes_read": BYTES, "seconds": NUM,
                                   "bytes_per_s": NUM, "shard_count": COUNT, "total_bytes": BYTES,
                                   "estimated_s": NUM, "error": STR})}, nullable=False)
limit_pair = obj({"soft": INT, "hard": INT})
limits = obj({"shm": obj({"path": STR, "total_bytes": BYTES, "free_bytes": BYTES, "fstype": STR, "error": STR}),
              "memlock": limit_pair, "nofile": limit_pair, "mem_total": BYTES, "mem_available": BYTES,
              "cgroup_memory_limit": BYTES, "rdma_devices": COUNT, "errors": ERRS}, nullable=False)
_PROBLEM_STR = ("file", "tensor", "safetensors_error", "error", "dtype", "shape", "other_tensor", "index_file", "files",
                "architecture", "model_type", "missing", "packed_shape", "expected_shape", "why", "logical_shape",
                "expected_logical", "expected_dtype", "missing_ids", "path", "entry", "json_type", "target",
                "quant_method", "quant_format", "expected", "algo", "actual", "source")
_PROBLEM_INT = ("size", "expected_size", "missing_bytes", "header_len", "limit", "offset", "gap_begin", "gap_end",
                "gap_bytes", "expected_bytes", "span_bytes", "begin", "previous_end", "overlap_bytes", "end",
                "extra_bytes", "tensors", "total_size", "data_bytes", "difference", "shards", "num_experts", "found",
                "found_per_layer", "layers", "count", "bits", "read_bytes", "mode")
# a problem's raw numbers are what its message formats: each known field has its type, others are scalars
problem = {"type": "object", "required": ["kind"],
           "properties": {"kind": {"type": "string"}, **{k: STR for k in _PROBLEM_STR}, **{k: INT for k in _PROBLEM_INT},
                          "stale_metadata": BOOL},
           "additionalProperties": {"type": ["string", "integer", "boolean", "null"]}}
group_row = {"type": "array", "minItems": 6, "maxItems": 6,
             "prefixItems": [{"type": "string"}, {"type": "string"}, {"type": "integer", "minimum": 0},
                             {"type": "integer", "minimum": 0}, {"type": "integer", "minimum": 0},
                             {"type": "string"}]}
model = obj({
  "schema": INT, "dir": STR, "exists": BOOL, "layout": STR, "repo": STR, "repo_source": STR, "revision": STR,
  "cache_dir": STR, "found_via": STR,
  "config": obj({"present": BOOL, "error": STR, "architecture": STR, "family": STR, "model_type": STR,
                 "text_model_type": STR, "quant_method": STR, "quant_format": STR, "fp4": {},
                 "group_size": INT, "block": {}, "num_experts": COUNT, "hidden_size": COUNT,
                 "moe_intermediate_size": COUNT, "expert_hidden": COUNT, "num_hidden_layers": COUNT}),
  "index": obj({"present": BOOL, "error": STR, "size": BYTES, "total_size": BYTES, "tensors": COUNT,
                "shards": COUNT}),
  "shards": arr(obj({"file": {"type": "string"}, "size": BYTES, "header_len": BYTES, "tensors": COUNT,
                     "data_bytes": BYTES,
                     "dtype_bytes": {"type": ["object", N], "additionalProperties": {"type": "integer", "minimum": 0}},
                     "ok": BOOL}, nullable=False)),
  "totals": obj({"shards": COUNT, "shards_ok": COUNT, "tensors": COUNT, "data_bytes": BYTES, "file_bytes": BYTES}),
  "quant": obj({"packed": COUNT, "fp8": COUNT, "blocks": COUNT, "expert_layers": COUNT,
                "experts_per_layer": obj({"min": COUNT, "max": COUNT})}),
  "inventory": obj({"schema": INT, "source": STR, "tensors": COUNT, "bytes": BYTES, "shards": COUNT,
                    "max_shard_bytes": BYTES, "columns": STRS, "groups": arr(group_row),
                    "config": {"type": ["object", N]},
                    "errors": arr(obj({"file": STR, "kind": STR}, nullable=False))}),
  "problems": arr(problem),
  "problem_counts": {"type": ["object", N], "additionalProperties": {"type": "integer", "minimum": 0}},
  "incomplete": arr(obj({"path": STR, "size": BYTES, "file": STR}, nullable=False)),
  "deep": obj({"source": STR, "files": COUNT, "verified": COUNT, "mismatched": COUNT, "unverified": STRS,
               "bytes": BYTES, "seconds": NUM, "rate": NUM, "jobs": COUNT, "manifest": STR}),
  "sample": obj({"seed": INT, "ranges_per_shard": COUNT, "shards": COUNT, "read_bytes": BYTES,
                 "zero_ranges": {}, "holes": {}}),
  "seconds": {"type": ["object", N], "additionalProperties": {"type": "number"}},
}, nullable=False)
from k3doctor.launch import _FACT_FIELDS  # noqa: E402
KIND = {"str": STR, "int": INT, "float": NUM, "bool": BOOL, "list": STRS}
launch_props = {name: KIND[kind] for name, (kind, _d) in _FACT_FIELDS.items() if kind != "dict"}
launch_props.update({"flags": {"type": ["object", N]},
                     "env": {"type": ["object", N], "additionalProperties": {"type": ["string", N]}},
                     "env_assignments": {"type": ["object", N], "additionalProperties": {"type": ["string", N]}},
                     "world_size": COUNT, "attention_tp": COUNT, "gpus_per_node": COUNT, "head_host": STR,
                     "head_port": INT})
launch = obj(launch_props, nullable=False)
schema = {
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "https://github.com/k3doctor/k3doctor/k3doctor/data/schemas/snapshot.schema.json",
  "title": "k3doctor snapshot (schema_version 1): the facts a check reads",
  "description": ("What `k3doctor snapshot` writes and `check --snapshot` reads. Every fact and field is optional "
                  "(absent or null = unknown); a present value must have its type, sizes are bytes (integers). "
                  "Keys not listed are allowed (a newer k3doctor's additions)."),
  "type": "object",
  "required": ["schema_version", "kind", "facts"],
  "properties": {
    "schema_version": {"const": 1}, "kind": {"const": "k3doctor.snapshot"},
    "facts": {"type": "object", "properties": {
      "host": host, "env": env, "packages": packages, "gpu": gpu, "net": net, "rendezvous": rendezvous,
      "mounts": mounts, "paths": paths, "limits": limits, "model": model,
      "launch": launch}},
  },
  "$defs": defs,
}
text = json.dumps(schema, indent=1) + "\n"
if "--check" in sys.argv[1:]:
    raise SystemExit(0 if OUT.read_text() == text else "snapshot.schema.json is stale: run python tools/make_snapshot_schema.py")
OUT.write_text(text)
