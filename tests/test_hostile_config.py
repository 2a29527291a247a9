"""A damaged or hostile config.json ends in one message naming the field (exit 2 from ``plan``, a
skip reason in ``check``), fast, with no traceback; names from it never act on the terminal."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from click.testing import CliRunner

from k3doctor.cli import main
from k3doctor.memory.configlimits import ConfigLimitError, check_config_limits

ROOT = Path(__file__).resolve().parent.parent
DENSE = json.loads((ROOT / "fixtures/receipts/configs/deepseek-r1-distill-qwen-14b-awq.json").read_text())

MUTATIONS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "layers-1e9": (lambda c: c.update(num_hidden_layers=10**9), "num_hidden_layers = 1000000000"),
    "layers-inf-float": (lambda c: c.update(num_hidden_layers=1e308), "num_hidden_layers = 1e+308"),
    "heads-0": (lambda c: c.update(num_attention_heads=0), "num_attention_heads = 0"),
    "experts-1e9": (lambda c: c.update(num_experts=10**9), "num_experts = 1000000000"),
    "gptq-bits-0": (lambda c: c.update(quantization_config={"quant_method": "gptq", "bits": 0, "group_size": 128}),
                    "quantization_config.bits = 0"),
    "group-0": (lambda c: c.update(quantization_config={"quant_method": "awq", "bits": 4, "group_size": 0}),
                "quantization_config.group_size = 0"),
    "fp8-block-0": (lambda c: c.update(quantization_config={"quant_method": "fp8", "weight_block_size": [0, 128]}),
                    "weight_block_size = [0, 128]"),
    "ignore-300k": (lambda c: c.update(quantization_config={"quant_method": "fp8", "weight_block_size": [128, 128],
                                                            "modules_to_not_convert": ["x"] * 300_000}),
                    "lists 300,000 modules"),
    "vision-1e6": (lambda c: c.update(vision_config={"hidden_size": 1152, "num_hidden_layers": 10**6}),
                   "vision_config.num_hidden_layers = 1000000"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_plan_names_the_field(tmp_path: Path, name: str) -> None:
    mutate, said = MUTATIONS[name]
    cfg = json.loads(json.dumps(DENSE))
    mutate(cfg)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    t0 = time.monotonic()
    res = CliRunner().invoke(main, ["plan", "--model", str(tmp_path), "--target", "h200-141g", "--tp", "2"])
    assert time.monotonic() - t0 < 10
    assert res.exit_code == 2, res.output
    assert said in res.output and "Traceback" not in res.output


def test_a_number_too_long_for_python_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(DENSE)[:-1] + ', "vocab_size": ' + "9" * 5000 + "}")
    res = CliRunner().invoke(main, ["plan", "--model", str(tmp_path), "--target", "h200-141g"])
    assert res.exit_code == 2 and "not usable JSON" in res.output and "Traceback" not in res.output


def test_check_skips_the_memory_checks_with_the_reason(tmp_path: Path) -> None:
    cfg = {**DENSE, "num_hidden_layers": 10**9}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    res = CliRunner().invoke(main, ["check", "--target", "h200-141g", "--model", str(tmp_path), "--select", "MEM",
                                    "-f", "json", "--", "vllm", "serve", str(tmp_path), "-tp", "2"])
    doc = json.loads(res.stdout)
    assert res.exit_code in (0, 1) and doc["summary"]["crashed"] == 0
    reasons = " ".join(r.get("reason") or "" for r in doc["results"])
    assert "num_hidden_layers = 1000000000" in reasons


def test_terminal_escapes_in_config_names_do_not_reach_the_output(tmp_path: Path) -> None:
    cfg = {**DENSE, "architectures": ["\x1b]52;c;aGk=\x07Evil\x9b31m"], "model_type": "\x1b[31mred"}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    res = CliRunner().invoke(main, ["plan", "--model", str(tmp_path), "--target", "h200-141g", "--tp", "2"])
    assert res.exit_code in (0, 1)
    assert not any(c in res.output for c in "\x1b\x07\x9b")


def test_safe_console_keeps_its_own_colour_but_not_the_input_s() -> None:
    import io

    from rich.text import Text

    from k3doctor.termsafe import safe_console

    buf = io.StringIO()
    console = safe_console(file=buf, force_terminal=True, color_system="standard", no_color=False, width=80)
    console.print(Text("model \x1b]0;pwned\x07x", style="bold red"))
    out = buf.getvalue()
    assert "\x1b[1;31m" in out and "pwned" not in out and "\x07" not in out


def test_every_real_config_is_within_the_limits() -> None:
    configs = sorted((ROOT / "fixtures/receipts/configs").glob("*.json")) + sorted((ROOT / "shared/receipt-configs").glob("*.json"))
    assert len(configs) >= 10
    for p in configs:
        check_config_limits(json.loads(p.read_text()))
    with pytest.raises(ConfigLimitError):
        check_config_limits({"text_config": {"hidden_size": 2**40}})


def test_deeply_nested_toml_config_is_a_usage_error(tmp_path: Path) -> None:
    cfg = tmp_path / "k3doctor.toml"
    cfg.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    res = CliRunner().invoke(main, ["check", "--target", "h200-141g", "--config", str(cfg)])
    assert res.exit_code == 2 and "nested too deeply" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_measured_gib_must_be_a_figure(value: str) -> None:
    res = CliRunner().invoke(main, ["plan", "--model", "moonshotai/Kimi-K3", "--target", "h200-141g", "--tp", "16",
                                    "--measured-gib", value])
    assert res.exit_code == 2 and "--measured-gib" in res.output


def test_thousands_of_unknown_flags_are_one_finding_and_fast() -> None:
    flags = [f"--f{i}" for i in range(20_000)]
    t0 = time.monotonic()
    res = CliRunner().invoke(main, ["check", "--target", "h200-141g", "--select", "CMD002", "-f", "json", "--",
                                    "sglang", "serve", "--model-path", "x", "--tp-szie", "8", *flags])
    assert time.monotonic() - t0 < 10
    findings = json.loads(res.stdout)["findings"]
    assert [f["subject"] for f in findings] == ["flag=--tp-szie", "flags=uninterpreted"]
    assert findings[1]["evidence"]["flags"] == 20_000


def test_a_snapshot_above_its_cap_is_refused_before_parsing(tmp_path: Path) -> None:
    from k3doctor.boundedio import LIMITS

    big = tmp_path / "big.json"
    with big.open("w") as fh:
        fh.write('{"kind": "k3doctor-snapshot", "schema_version": 1, "facts": {"gpu": {"devices": [')
        fh.write(",".join(['{"name": "x"}'] * (LIMITS["snapshot"] // 12)))
        fh.write("]}}}")
    res = CliRunner().invoke(main, ["check", "--snapshot", str(big)])
    assert res.exit_code == 2 and "Traceback" not in res.output and str(big) in res.output


@pytest.mark.parametrize("gpus", ["0", "-3", "100000000", "true"])
def test_gpus_in_a_config_file_is_bounded(tmp_path: Path, gpus: str) -> None:
    """`gpus = 100000000` in k3doctor.toml built that many devices (> 60 s, 9 GB); it is a usage error."""
    cfg = tmp_path / "k3doctor.toml"
    cfg.write_text(f'target = "h200"\ngpus = {gpus}\n')
    r = CliRunner().invoke(main, ["check", "--config", str(cfg)])
    assert r.exit_code == 2 and "gpus" in r.output and "1 to 1024" in r.output, r.output


def test_the_target_fact_refuses_an_impossible_node_size() -> None:
    from k3doctor.targets import TargetError, get_target, gpu_fact_for_target

    assert len(gpu_fact_for_target(get_target("h200"), 1024)["devices"]) == 1024
    with pytest.raises(TargetError):
        gpu_fact_for_target(get_target("h200"), 10**8)
