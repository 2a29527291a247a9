"""Typed, frozen facts: round trip of the real H200 snapshots, typed fields, lenient reading."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from k3doctor.facts import Facts, load_snapshot
from k3doctor.facttypes import FACT_TYPES, ClusterFact, GpuFact, ModelFact, NetFact, PackagesFact, typed
from k3doctor.launch import parse_launch
from k3doctor.launch import LaunchSpec

SNAPSHOTS = sorted((Path(__file__).parent.parent / "fixtures" / "snapshots").glob("*.json"))
REAL = [p for p in SNAPSHOTS if p.name in ("h200-live-device.json", "h200-1gpu.json", "h200x8-hgx-node0.json")]


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_schema_1_snapshot_reads_typed_and_round_trips(path: Path) -> None:
    doc = load_snapshot(path)
    facts = Facts(doc["facts"], source=f"snapshot {path}")
    gpu = facts.get("gpu")
    assert isinstance(gpu, GpuFact) and gpu.ok and gpu.devices
    dev = gpu.devices[0]
    assert dev.cc == (9, 0) and dev.memory_total and dev.memory_total > 140 * 10**9 and "H200" in dev.gpu_name
    assert gpu.min_memory_total == min(d["memory_total"] for d in doc["facts"]["gpu"]["devices"])
    # the snapshot the store would write is the document it read, key for key
    assert json.dumps(facts.known(), sort_keys=True) == json.dumps(doc["facts"], sort_keys=True)


def test_live_device_snapshot_net_and_packages_are_typed() -> None:
    doc = load_snapshot(next(p for p in SNAPSHOTS if p.name == "h200-live-device.json"))
    facts = Facts(doc["facts"])
    net, pkgs = facts.get("net"), facts.get("packages")
    assert isinstance(net, NetFact) and net.interface("eth0") is not None and net.interface("eth0").up
    assert net.interface("nope0") is None
    assert isinstance(pkgs, PackagesFact) and pkgs.version("torch") == doc["facts"]["packages"]["torch"]
    assert pkgs.version("vllm") is None


def test_facts_are_frozen_and_read_only_mappings() -> None:
    gpu = typed("gpu", {"ok": True, "source": "nvml", "devices": [{"index": 0, "name": "X", "cc": [9, 0]}]})
    with pytest.raises(dataclasses.FrozenInstanceError):
        gpu.ok = False  # type: ignore[misc]
    with pytest.raises(TypeError):
        gpu["ok"] = False  # type: ignore[index]
    assert gpu["source"] == "nvml" and gpu.get("missing") is None and dict(gpu)["ok"] is True


def test_launch_fact_carries_the_parallel_plan() -> None:
    spec = parse_launch("sglang serve --model-path m --tp 16 --ep 16 --dp 2 --enable-dp-attention --nnodes 2 "
                        "--dist-init-addr 10.0.0.1:5000")
    launch = typed("launch", spec.to_dict())
    assert isinstance(launch, LaunchSpec)
    assert (launch.tp, launch.ep, launch.dp, launch.world_size, launch.attention_tp) == (16, 16, 2, 16, 8)
    assert (launch.nnodes, launch.gpus_per_node, launch.head_host, launch.head_port) == (2, 8, "10.0.0.1", 5000)
    assert launch.world_size == spec.world_size


@pytest.mark.parametrize("name", sorted(FACT_TYPES))
@pytest.mark.parametrize("garbage", [{}, {"devices": "x", "interfaces": 3, "nodes": [1, None], "tp": "8", "cc": [9]},
                                     {"problems": None, "inventory": [], "env": [1, 2]}])
def test_malformed_documents_never_raise(name: str, garbage: dict) -> None:
    fact = typed(name, garbage)
    assert isinstance(fact, FACT_TYPES[name]) and fact.to_json() == garbage


def test_typed_fields_of_malformed_documents_are_empty_not_wrong() -> None:
    gpu = GpuFact.from_json({"ok": True, "devices": [{"cc": ["9", 0], "memory_total": "141 GB"}, "junk"]})
    assert len(gpu.devices) == 1 and gpu.devices[0].cc is None and gpu.devices[0].memory_total is None
    launch = LaunchSpec.from_json({"tp": -4, "pp": True, "world_size": None})
    assert (launch.tp, launch.pp, launch.world_size) == (1, 1, 1)
    cluster = ClusterFact.from_json({"nodes": [{"node_rank": 1, "hostname": "b"}, {"node_rank": 0}], "nnodes": 2})
    assert [n.node_rank for n in cluster.nodes] == [0, 1]
    model = ModelFact.from_json({"dir": "/m", "exists": True, "problems": [{"kind": "x"}, 7]})
    assert model.exists and len(model.problems) == 1 and model.inventory is None


def test_store_types_set_and_probed_facts_but_not_other_values() -> None:
    facts = Facts({"gpu": {"ok": False, "error": "NVML failed"}, "limits": {"nofile": {}}},
                  probes={"net": lambda ctx: {"interfaces": []}}, live=True)
    assert isinstance(facts.get("gpu"), GpuFact) and facts.get("gpu").error == "NVML failed"
    assert type(facts.get("limits")) is dict
    assert isinstance(facts.get("net"), NetFact)
    facts.set("launch", {"engine": "vllm", "tp": 8})
    assert isinstance(facts.get("launch"), LaunchSpec) and facts.get("launch").engine == "vllm"
    assert facts.known()["launch"] == {"engine": "vllm", "tp": 8}


def test_derived_facts_are_made_once_and_remade_only_when_an_input_changes() -> None:
    calls = []

    def derive_double(launch) -> int:
        calls.append(1)
        return launch.tp * 2

    facts = Facts({"launch": {"engine": "vllm", "tp": 4}})
    facts.derived["double"] = derive_double
    assert facts.get("double") == 8 and facts.get("double") == 8 and len(calls) == 1
    facts.set("run", {"probe_errors": {}})          # not an input of any derivation
    assert facts.get("double") == 8 and len(calls) == 1
    facts.set("launch", {"engine": "vllm", "tp": 8})
    assert facts.get("double") == 16 and len(calls) == 2
    assert "double" not in facts.known()


def test_a_derivation_that_skips_is_remembered_with_its_reason() -> None:
    from k3doctor.model import Skip

    calls = []

    def derive_never(launch) -> int:
        calls.append(1)
        raise Skip("cannot be made")

    facts = Facts({"launch": {"engine": "vllm"}})
    facts.derived["never"] = derive_never
    for _ in range(3):
        with pytest.raises(Skip, match="cannot be made"):
            facts.get("never")
    assert len(calls) == 1
