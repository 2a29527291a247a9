"""The published JSON Schemas (k3doctor/data/schemas/) against real output of check, plan and explain."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from k3doctor.cli import main

jsonschema = pytest.importorskip("jsonschema")
referencing = pytest.importorskip("referencing")

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "k3doctor" / "data" / "schemas"
DEMO = ROOT / "k3doctor" / "data" / "demo"
SEED = ["sglang", "serve", "--model-path", "moonshotai/Kimi-K3", "--tp-size", "16", "--ep-size", "16", "--nnodes", "2",
        "--node-rank", "0", "--dist-init-addr", "10.0.0.1:5000"]


def validator(name: str):  # type: ignore[no-untyped-def]
    schemas = {p.name: json.loads(p.read_text()) for p in SCHEMAS.glob("*.schema.json")}
    registry = referencing.Registry().with_resources(
        (s["$id"], referencing.Resource.from_contents(s)) for s in schemas.values())
    schema = schemas[f"{name}.schema.json"]
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, registry=registry)


def run_json(*args: str) -> object:
    res = CliRunner().invoke(main, [*args], catch_exceptions=False)
    return json.loads(res.stdout)


@pytest.mark.parametrize("args", [
    ["check", "--isolated", "--snapshot", str(DEMO / "node0.json"), "--snapshot", str(DEMO / "node1.json"), "--format",
     "json", "--", *SEED],
    ["check", "--isolated", "--target", "h200-141g", "--strict", "--format", "json", "--", "vllm", "serve", "x"],
    ["check", "--isolated", "--target", "b200", "--format", "json", "--", *SEED],
])
def test_check_output_matches_schema(args: list[str]) -> None:
    validator("check").validate(run_json(*args))


def test_demo_documents_match_the_check_schema() -> None:
    v = validator("check")
    for doc in run_json("demo", "--format", "json")["demo"]:  # type: ignore[index]
        v.validate(doc)


@pytest.mark.parametrize("args", [
    ["plan", "--model", "moonshotai/Kimi-K3", "--target", "h200", "--format", "json", "--", *SEED],
    ["plan", "--model", "moonshotai/Kimi-K3", "--target", "h200", "--search", "--format", "json"],
    ["plan", "--model", "moonshotai/Kimi-K3", "--target", "b200", "--engine", "vllm", "--search", "--format", "json"],
])
def test_plan_output_matches_schema(args: list[str]) -> None:
    validator("plan").validate(run_json(*args))


@pytest.mark.parametrize("args", [
    ["explain", "--format", "json", "RuntimeError: cp_world_size must be positive"],
    ["explain", "--format", "json", "ARCH003"],
    ["explain", "--format", "json", "nothing anyone has seen before"],
])
def test_explain_output_matches_schema(args: list[str]) -> None:
    validator("explain").validate(run_json(*args))


def test_the_schemas_can_fail() -> None:
    doc = run_json("check", "--isolated", "--target", "h200", "--select", "CMD", "--format", "json", "--", *SEED)
    assert isinstance(doc, dict)
    del doc["summary"]["ran"]
    with pytest.raises(jsonschema.ValidationError):
        validator("check").validate(doc)
    search = run_json("plan", "--model", "moonshotai/Kimi-K3", "--target", "h200", "--search", "--format", "json")
    assert isinstance(search, dict)
    search["candidates"][0]["reason"] = "budget of -0.5 GiB"
    with pytest.raises(jsonschema.ValidationError):
        validator("plan").validate(search)


def test_a_plan_with_uncertain_quantisation_matches_schema(tmp_path) -> None:
    """An HQQ checkpoint (a method whose layout is not modelled exactly): the plan's JSON carries
    weights_uncertainty, and the schema describes it."""
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
           "quantization_config": {"quant_method": "hqq", "nbits": 4, "group_size": 64}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    doc = run_json("plan", "--model", str(tmp_path), "--target", "h100", "--tp", "1", "--format", "json")
    assert set(doc["weights_uncertainty"]) >= {"reason", "low_bytes", "high_bytes"}, doc.get("weights_uncertainty")  # type: ignore[index,union-attr]
    validator("plan").validate(doc)
