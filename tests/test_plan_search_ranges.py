"""``plan --search`` never prints a negative or out-of-range setting (issue 16).

Many layouts through the command itself: every bundled MoE family and a dense model, every GPU
target, both engines, nodes of 8 and of 4 GPUs, up to 16 nodes (128 GPUs: TP, EP, DP attention and
PP), with and without a concurrency and a long context. The JSON's sizes are positive integers
(expert-parallel within the plan), its byte and token figures are not negative, and neither the
JSON's reasons nor the rich table and its "why the others fail" lines hold a negative number.
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from k3doctor.commands.plan import command
from k3doctor.targets import TARGETS

MODELS = ["kimi-k3", "kimi-k2", "deepseek-v3", "deepseek-r1-fp4", "qwen3-235b-a22b", "gpt-oss-120b", "glm-4.5",
          "mixtral-8x22b", "llama-3.1-405b", "qwen3-0.6b"]
VARIANTS = [[], ["--concurrency", "64"], ["--concurrency", "256", "--context", "1000000"]]
#: a minus sign in front of a number (not a hyphen inside a word, a flag or a range)
NEGATIVE = re.compile(r"(?<![\w.\-])-\d")
SIZES = ("gpus", "nodes", "tp", "ep", "pp", "dp")
AMOUNTS = ("max_rank_weights_bytes", "kv_tokens", "max_context", "max_concurrency")


def _bad_candidates(doc: dict) -> list[tuple]:
    bad = []
    for c in doc["candidates"]:
        for k in SIZES:
            if not isinstance(c[k], int) or c[k] < 1:
                bad.append((c["label"], k, c[k]))
        if c["ep"] > c["gpus"] or c["tp"] * c["pp"] > c["gpus"] * max(1, c["dp"]) or c["nodes"] > c["gpus"]:
            bad.append((c["label"], "sizes", c))
        for k in AMOUNTS:
            v = c.get(k)
            if v is not None and (not isinstance(v, int) or v < 0):
                bad.append((c["label"], k, v))
        if c["fits"] and not (c.get("kv_tokens", 0) > 0 and c.get("max_context", 0) > 0):
            bad.append((c["label"], "fits without KV room", c))
        if NEGATIVE.search(c["reason"]):
            bad.append((c["label"], "reason", c["reason"]))
    return bad


@pytest.mark.parametrize("model", MODELS)
def test_search_prints_no_negative_or_out_of_range_setting(model: str) -> None:
    runner = CliRunner()
    problems = []
    runs = 0
    for gpu in sorted(TARGETS):
        for engine in ("sglang", "vllm"):
            for var in VARIANTS:
                for gpn in ([[], ["--gpus-per-node", "4"]] if gpu.startswith("h200") else [[]]):
                    args = ["--model", model, "--engine", engine, "--gpu", gpu, "--search", "--max-nodes", "16",
                            "--top", "1000", *var, *gpn]
                    r = runner.invoke(command, [*args, "--json"])
                    runs += 1
                    assert r.exit_code in (0, 1) and "Traceback" not in r.output, (args, r.output[-500:])
                    problems += [(args, *b) for b in _bad_candidates(json.loads(r.stdout))]
                    text = runner.invoke(command, args).output
                    problems += [(args, "text", line) for line in text.splitlines() if NEGATIVE.search(line)]
    assert runs >= 40
    assert not problems, problems[:5]


def test_the_negative_pattern() -> None:
    assert NEGATIVE.search("KV tokens -33,792") and NEGATIVE.search("(-1 GiB)")
    assert not any(NEGATIVE.search(s) for s in ("TP16 PP2", "fp8_e4m3", "1–2 GiB", "--tp-size 8", "SM100-only",
                                               "x-1", "model-00001-of-000096"))
