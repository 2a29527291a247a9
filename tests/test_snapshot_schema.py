"""The snapshot schema (k3doctor/data/schemas/snapshot.schema.json) and its use at load time: a
snapshot whose facts have the wrong types is bad input (exit 2 naming the field), never a check
that crashes on it (exit 3)."""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fixtures.hostile_run import mutate_json
from k3doctor.cli import main
from k3doctor.launch import _FACT_FIELDS
from k3doctor.schemacheck import load_schema, validate

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOTS = sorted(p for p in [*ROOT.glob("fixtures/snapshots/*.json"), *ROOT.glob("k3doctor/data/demo/*.json")]
                   if json.loads(p.read_text()).get("kind") == "k3doctor.snapshot")
K3_LAUNCH = ["--", "sglang", "serve", "--model-path", "moonshotai/Kimi-K3", "--tp", "16", "--nnodes", "2",
             "--node-rank", "0", "--dist-init-addr", "10.0.0.1:5000"]


def _live_snapshot(tmp_path: Path) -> dict[str, Any]:
    """A snapshot of this machine with a model directory and a launch: every fact kind present."""
    from fixtures.checkpoints.generate import make_small_real

    make_small_real(tmp_path / "m")
    out = tmp_path / "live.json"
    r = CliRunner().invoke(main, ["snapshot", "--model", str(tmp_path / "m"), "-o", str(out), "--",
                                  "sglang", "serve", "--model-path", str(tmp_path / "m"), "--tp", "2",
                                  "--nnodes", "2", "--node-rank", "1", "--dist-init-addr", "10.0.0.1:5000"])
    assert r.exit_code == 0, r.output
    doc: dict[str, Any] = json.loads(out.read_text())
    assert {"launch", "model", "gpu", "net", "mounts", "paths", "limits", "rendezvous"} <= set(doc["facts"])
    return doc


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: p.name)
def test_every_bundled_snapshot_is_valid(path: Path) -> None:
    assert validate(json.loads(path.read_text()), load_schema("snapshot")) == []


def test_a_fresh_snapshot_is_valid_by_both_validators(tmp_path: Path) -> None:
    doc = _live_snapshot(tmp_path)
    assert validate(doc, load_schema("snapshot")) == []
    jsonschema = pytest.importorskip("jsonschema")
    schema = load_schema("snapshot")
    jsonschema.Draft202012Validator.check_schema(schema)
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(doc)) == []


def test_the_launch_schema_follows_the_launch_fields() -> None:
    """Each LaunchSpec field's JSON kind is the schema's (they cannot drift apart)."""
    schema = load_schema("snapshot")
    props = schema["properties"]["facts"]["properties"]["launch"]["properties"]
    want = {"str": ["string", "null"], "int": ["integer", "null"], "float": ["number", "null"],
            "bool": ["boolean", "null"], "list": ["array", "null"], "dict": ["object", "null"]}
    for name, (kind, _default) in _FACT_FIELDS.items():
        node = props[name]
        while "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
        assert node["type"] == want[kind], name


@pytest.mark.parametrize("value,ok", [(1, True), (None, True), (1.0, False), (True, False), ("1", False),
                                      (-1, False), (2**63, False)])
def test_bytes_fields_are_non_negative_integers(value: Any, ok: bool) -> None:
    doc = {"schema_version": 1, "kind": "k3doctor.snapshot", "facts": {"gpu": {"devices": [{"memory_total": value}]}}}
    problems = validate(doc, load_schema("snapshot"))
    assert (problems == []) is ok, problems
    if not ok:
        assert problems[0][0] == "facts.gpu.devices[0].memory_total"


def test_numbers_are_finite_and_lists_have_their_shape() -> None:
    schema = load_schema("snapshot")
    nan = {"schema_version": 1, "kind": "k3doctor.snapshot", "facts": {"host": {"time_unix": math.nan}}}
    assert validate(nan, schema)[0][0] == "facts.host.time_unix"
    cc = {"schema_version": 1, "kind": "k3doctor.snapshot", "facts": {"gpu": {"devices": [{"cc": [9]}]}}}
    assert "at least 2" in validate(cc, schema)[0][1]
    row = {"schema_version": 1, "kind": "k3doctor.snapshot",
           "facts": {"model": {"inventory": {"groups": [["t", "BF16", "12", 1, 0, "0-3"]]}}}}
    assert validate(row, schema)[0][0] == "facts.model.inventory.groups[0][2]"
    assert validate({"kind": "k3doctor.snapshot", "facts": {}}, schema)[0][1] == "has no 'schema_version'"


def test_a_malformed_field_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    doc = json.loads((ROOT / "fixtures/snapshots/h200x8-hgx-node0.json").read_text())
    doc["facts"]["gpu"]["devices"][1]["memory_total"] = "x"
    snap = tmp_path / "bad.json"
    snap.write_text(json.dumps(doc))
    for args in (["check", "--snapshot", str(snap)], ["plan", "--snapshot", str(snap), "--tp", "8",
                                                        "--model", "moonshotai/Kimi-K3"]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 2, r.output
        assert "bad.json" in r.output and "facts.gpu.devices[1].memory_total" in r.output
        assert "k3doctor snapshot -o FILE" in r.output


def _mutate(base: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    d = copy.deepcopy(base)
    mutate_json(d["facts"], rng, rng.choice([1, 1, 2, 5]))
    return d


def _problems_snapshot(tmp_path: Path) -> dict[str, Any]:
    """A model-only snapshot whose scan found problems of many kinds (each with its raw numbers)."""
    from fixtures.checkpoints.generate import corrupt, make_small_real

    doc: dict[str, Any] = {}
    problems: list[dict[str, Any]] = []
    for case in ("truncated_shard", "shape_dtype_mismatch", "offsets_overlap", "offsets_gap", "wrong_total_size",
                 "quant_scale_shape", "expert_missing", "index_tensor_other_shard", "trailing_bytes"):
        d = tmp_path / case
        make_small_real(d)
        corrupt(d, case)
        out = tmp_path / f"{case}.json"
        r = CliRunner().invoke(main, ["snapshot", "--only", "model", "--model", str(d), "-o", str(out)])
        assert r.exit_code == 0, r.output
        doc = json.loads(out.read_text())
        problems += doc["facts"]["model"]["problems"]
    doc["facts"]["model"]["problems"] = problems
    doc["facts"]["model"]["problem_counts"] = {p["kind"]: 1 for p in problems}
    assert len({p["kind"] for p in problems}) >= 8
    return doc


@pytest.mark.slow
@pytest.mark.parametrize("source", ["h200x8-hgx-node0", "demo-node0", "live", "problems"])
def test_mutated_snapshots_never_crash_a_check(tmp_path: Path, source: str) -> None:
    """Fields replaced by values of other types (or odd values of their own type): every run ends in
    exit 0/1 (the values were acceptable) or 2 (the file is refused with its field named), never in a
    crashed check (exit 3) or a traceback. Seeded, so a failure reproduces."""
    if source in ("live", "problems"):
        base = _live_snapshot(tmp_path) if source == "live" else _problems_snapshot(tmp_path)
        assert validate(base, load_schema("snapshot")) == []
    else:
        path = ROOT / ("k3doctor/data/demo/node0.json" if source == "demo-node0" else f"fixtures/snapshots/{source}.json")
        base = json.loads(path.read_text())
    rng = random.Random(f"k3doctor-{source}")
    snap = tmp_path / "s.json"
    for n in range(60):
        doc = _mutate(base, rng)
        snap.write_text(json.dumps(doc))
        args = ["check", "--snapshot", str(snap), "--format", "json"] + (K3_LAUNCH if n % 2 else [])
        r = CliRunner().invoke(main, args)
        assert r.exit_code in (0, 1, 2), (n, r.exit_code, r.output[-1500:])
        assert r.exception is None or isinstance(r.exception, SystemExit), (n, r.exception)
        if r.exit_code == 2:
            assert "s.json: facts." in r.output, r.output


def test_the_schema_file_is_what_its_generator_writes() -> None:
    import subprocess
    import sys

    r = subprocess.run([sys.executable, str(ROOT / "tools" / "make_snapshot_schema.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
