"""Golden outputs of the user-visible contract: JSON and JUnit reports, exit codes and check codes
over the demo scenarios and the fixture snapshots (issue 14: written before the typed-facts
refactor, so every step of it must leave these byte-identical after normalisation).

    python -m tests.golden.make_golden          # rewrite tests/golden/*.out after an intended change

Normalisation (``normalise``): run durations, timestamps, absolute repository paths and the
k3doctor version are replaced by placeholders; nothing else is touched.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

SEED_SGLANG = ("sglang serve --trust-remote-code --model-path moonshotai/Kimi-K3 --tp-size 16 --ep-size 16 "
               "--moe-runner-backend marlin --mem-fraction-static 0.85 --nnodes 2 --node-rank 0 "
               "--dist-init-addr 10.0.0.1:5000")
SEED_VLLM_PP = ("VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION=1 vllm serve moonshotai/Kimi-K3 --trust-remote-code "
                "--tensor-parallel-size 8 --pipeline-parallel-size 2 --gpu-memory-utilization 0.97 "
                "--max-model-len 65536")
SNAP = "fixtures/snapshots"

#: name -> CLI arguments (after ``k3doctor``)
CASES: dict[str, list[str]] = {
    "demo-json": ["demo", "--format", "json"],
    "check-target-sglang-json": ["check", "--target", "h200-141g", "--format", "json", "--", *SEED_SGLANG.split()],
    "check-target-vllm-pp-junit": ["check", "--target", "h200-141g", "--format", "junit", "--", *SEED_VLLM_PP.split()],
    "check-1gpu-json": ["check", "--snapshot", f"{SNAP}/h200-1gpu.json", "--format", "json", "--",
                        "vllm", "serve", "Qwen/Qwen3-8B"],
    "check-live-device-json": ["check", "--snapshot", f"{SNAP}/h200-live-device.json", "--format", "json"],
    "check-two-nodes-json": ["check", "--snapshot", f"{SNAP}/h200x8-hgx-node0.json", "--snapshot",
                             f"{SNAP}/h200x8-hgx-node1.json", "--format", "json", "--", *SEED_SGLANG.split()],
    "check-two-nodes-junit": ["check", "--snapshot", f"{SNAP}/h200x8-hgx-node0.json", "--snapshot",
                              f"{SNAP}/h200x8-hgx-node1.json", "--format", "junit", "--", *SEED_SGLANG.split()],
    "check-demo-node0-json": ["check", "--snapshot", "k3doctor/data/demo/node0.json", "--format", "json", "--",
                              *SEED_SGLANG.split()],
    "plan-k3-json": ["plan", "--model", "moonshotai/Kimi-K3", "--gpu", "h200", "--json", "--", *SEED_SGLANG.split()],
    "list-checks": ["list"],
}

_NUM_TIME = re.compile(r'("(?:duration_s|elapsed_s|time|took_s|seconds)"\s*:\s*)[0-9.eE+-]+')
_XML_TIME = re.compile(r'\b(time|timestamp)="[^"]*"')
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")


def normalise(text: str) -> str:
    from k3doctor import __version__

    text = text.replace(str(ROOT), "<ROOT>")
    text = _NUM_TIME.sub(r"\g<1>0", text)
    text = _XML_TIME.sub(r'\1="0"', text)
    text = _ISO.sub("<TIME>", text)
    return text.replace(__version__, "<VERSION>")


def run_case(args: list[str]) -> tuple[int, str]:
    from click.testing import CliRunner

    from k3doctor.cli import main

    res = CliRunner().invoke(main, args, env={"NO_COLOR": "1", "COLUMNS": "100", "TERM": "dumb"},
                             catch_exceptions=False)
    return res.exit_code, normalise(res.output)


def render(name: str) -> str:
    code, out = run_case(CASES[name])
    return f"exit {code}\n{out}"


def main() -> int:
    import os

    os.chdir(ROOT)
    for name in CASES:
        (HERE / f"{name}.out").write_text(render(name), encoding="utf-8")
        print("wrote", name)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
