"""``k3doctor demo``: the seed's 2-node × 8 H200 Kimi-K3 deployment, checked statically.

Bundled data (``k3doctor/data/demo``): two node snapshots built from a real H200 reading
(``fixtures/demo/make_demo.py`` says what is real and what is the scenario). Three launches are
checked against them, the ones that failed the seed's deployment late:

1. SGLang, H200 "balanced" recipe, TP16 EP16 over both nodes;
2. vLLM with the Blackwell-only tail-fusion flag and pipeline parallel (TP8 × PP2);
3. vLLM TP16 over both nodes (the usual way around the PP crash) asking for 65,536 tokens.
"""

from __future__ import annotations

import sys

from pathlib import Path
from typing import Any

import click

from .options import format_option, output_option

DEMO_DIR = Path(__file__).resolve().parent.parent / "data" / "demo"

_HEAD = ["--nnodes", "2", "--node-rank", "0"]

#: Families shown per scenario after the first (the node-level NET/FS/CLU findings do not change
#: with the engine's flags, so the vLLM scenarios show only what their flags change).
FOCUS: dict[str, list[str]] = {"sglang": [], "vllm-pp": ["ARCH", "MEM", "CMD"], "vllm-tp16": ["ARCH", "MEM", "CMD"]}

SCENARIOS: dict[str, tuple[str, list[str]]] = {
    "sglang": (
        "SGLang · H200 balanced recipe · TP16 EP16 · 2 nodes",
        ["NCCL_MNNVL_ENABLE=1", "NCCL_CUMEM_ENABLE=1", "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0",
         "sglang", "serve", "--trust-remote-code", "--model-path", "moonshotai/Kimi-K3",
         "--tp-size", "16", "--ep-size", "16", "--moe-runner-backend", "marlin",
         "--decode-attention-backend", "flashmla", "--enable-symm-mem", "--mem-fraction-static", "0.85",
         "--reasoning-parser", "kimi_k3", "--tool-call-parser", "kimi_k3", "--host", "0.0.0.0",
         "--port", "30000", *_HEAD, "--dist-init-addr", "10.0.0.1:5000"],
    ),
    "vllm-pp": (
        "vLLM · tail-fusion flag + pipeline parallel · TP8 × PP2 · 2 nodes",
        ["VLLM_ENABLE_K3_LATENT_MOE_TAIL_FUSION=1", "vllm", "serve", "moonshotai/Kimi-K3", "--trust-remote-code",
         "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2", *_HEAD,
         "--master-addr", "10.0.0.1", "--master-port", "5000", "--load-format", "fastsafetensors",
         "--moe-backend", "marlin", "--gpu-memory-utilization", "0.97", "--max-model-len", "65536"],
    ),
    "vllm-tp16": (
        "vLLM · TP16 over both nodes (the PP work-around) · 65,536-token context",
        ["vllm", "serve", "moonshotai/Kimi-K3", "--trust-remote-code", "--tensor-parallel-size", "16", *_HEAD,
         "--master-addr", "10.0.0.1", "--master-port", "5000", "--load-format", "fastsafetensors",
         "--moe-backend", "marlin", "--gpu-memory-utilization", "0.97", "--max-model-len", "65536"],
    ),
}


@click.command()
@click.option("--scenario", type=click.Choice(["all", *SCENARIOS]), default="all", show_default=True)
@format_option(["rich", "json"], "rich")
@output_option()
@click.option("--no-plan", is_flag=True, help="Skip the per-rank memory chart of the SGLang scenario.")
def command(scenario: str, fmt: str, output: str | None, no_plan: bool) -> None:
    """Check the seed's 2×8 H200 Kimi-K3 deployment statically (no GPU needed, < 2 s).

    Shows what would fail and how to fix it for the SGLang recipe and two vLLM variants, using
    bundled snapshots of two H200 nodes. Exits 0 when the demo ran; `k3doctor check` on the same
    input exits 1.
    """
    from .options import captured_output

    with captured_output(output, "the demo"):
        _demo(scenario, fmt, no_plan)


def _demo(scenario: str, fmt: str, no_plan: bool) -> None:
    import json
    import sys

    from .run_check import collect_report, emit_report

    snapshots = [str(DEMO_DIR / "node0.json"), str(DEMO_DIR / "node1.json")]
    names = list(SCENARIOS) if scenario == "all" else [scenario]
    documents: list[dict[str, Any]] = []
    for name in names:
        title, launch = SCENARIOS[name]
        focus = FOCUS[name] if scenario == "all" and fmt == "rich" else []
        kw = {"snapshots": snapshots, "launch": launch, "launch_given": True, "fmt": fmt, "select": focus}
        report = collect_report(kw)
        report.meta.update({"scenario": name, "scenario_title": title, "launch": " ".join(launch)})
        if fmt == "json":
            from ..reporters.json_report import report_document

            documents.append(report_document(report))
            continue
        _print_command(title, launch, focus)
        emit_report(report, "rich", None, verbose=False)
        if name == "sglang" and not no_plan:
            _print_plan(snapshots[0], launch)
        sys.stdout.write("\n")
    if fmt == "json":
        click.echo(json.dumps({"schema_version": 1, "demo": documents}, indent=2, default=str))
    else:
        from ..reporters.fold import fold
        from ..reporters.text import console_width

        hint = ("Run the same checks on your nodes: `k3doctor check -- <launch command>`; "
                "per-node fixes: `eval \"$(k3doctor env --dist-init-addr HEAD:PORT)\"`.")
        click.echo("\n".join(fold(hint, console_width(False))))


def _print_command(title: str, launch: list[str], focus: list[str]) -> None:
    from ..cli import color_enabled
    from ..reporters.fold import fold, fold_command
    from ..reporters.text import make_console

    out = sys.stdout  # click.get_text_stream is deprecated (Click 8.5); CliRunner swaps sys.stdout too
    console = make_console(out, color_enabled(out))
    if len(title) + 6 <= console.width:
        console.rule(title, style="bold")
    else:  # rich would shorten a long title with an ellipsis
        console.rule(style="bold")
        for line in fold(title, console.width):
            console.print(line, style="bold", highlight=False, markup=False, soft_wrap=True)
    for line in fold_command(launch, console.width):  # `\` continuations: copy-paste runs it
        console.print(line, style="dim", highlight=False, markup=False, soft_wrap=True)
    if focus:
        for line in fold(f"(showing {', '.join(focus)}; the node findings above are unchanged)", console.width):
            console.print(line, style="dim", highlight=False, markup=False, soft_wrap=True)
    console.print()


def _print_plan(snapshot: str, launch: list[str]) -> None:
    from .plan import command as plan_command

    try:
        plan_command.main(args=["--snapshot", snapshot, "--", *launch], prog_name="k3doctor plan",
                          standalone_mode=False)
    except click.exceptions.Exit:
        pass
    except click.ClickException as exc:  # the chart is an extra; the checks already ran
        click.echo(f"(per-rank memory chart unavailable: {exc.format_message()})", err=True)
