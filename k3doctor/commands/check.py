"""``k3doctor check``: run the preflight checks on this node, a snapshot, or a target profile."""

from __future__ import annotations

from typing import Any

import click

from ..facts import DEFAULT_PROBE_TIMEOUT
from ..reporters import REPORTERS
from .options import config_options, format_option, output_option, target_options

#: config-file key -> keyword of the check command's option
CONFIG_KEYS = {"select": "select", "ignore": "ignore", "target": "target", "gpus": "gpus", "strict": "strict",
               "fail-on": "fail_on", "format": "fmt", "output": "output", "model": "model_dir",
               "launch-file": "launch_file", "env-file": "env_file", "severity": "severity"}


class DashDashCommand(click.Command):
    """Remembers whether ``--`` was on the command line (to tell "empty launch" from "none")."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["k3doctor.dashdash"] = "--" in args
        return super().parse_args(ctx, args)


def common_fact_options(fn: Any) -> Any:
    """Options that shape the facts, shared by check and snapshot."""
    opts = [
        click.option("--model", "model_dir", type=click.Path(file_okay=False),
                     help="Local model directory (safetensors shards, index, config.json)."),
        click.option("--env-file", type=click.Path(dir_okay=False),
                     help="Shell file of `export VAR=value` lines the launch will source."),
        click.option("--probe-timeout", type=click.FloatRange(0.1, 3600), default=DEFAULT_PROBE_TIMEOUT,
                     show_default=True, help="Seconds one probe may take before it is abandoned."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


@click.command(cls=DashDashCommand, context_settings={"max_content_width": 100})
@click.option("--snapshot", "snapshots", multiple=True, type=click.Path(dir_okay=False),
              help="Check a saved snapshot instead of this node (repeat for several nodes: adds the CLU checks).")
@target_options("Check statically against a GPU profile (see `k3doctor list --targets`); alias --gpu.",
                "With --target: GPUs per node (default: the profile's node size); alias --gpus-per-node.")
@common_fact_options
@click.option("--launch-file", type=click.Path(dir_okay=False),
              help="Read the launch command from a launch script (shebang, export lines, continuations, exec).")
@click.option("--deep", is_flag=True, help="sha256 every shard against local HF metadata or --manifest.")
@click.option("--manifest", type=click.Path(dir_okay=False), help="Manifest from `k3doctor manifest create`.")
@click.option("--deep-timeout", type=click.FloatRange(1), default=7200.0, show_default=True,
              help="Seconds --deep/--manifest hashing may take (unfinished files are reported, not hung on).")
@click.option("--jobs", type=click.IntRange(1, 256), help="Parallel hash workers for --deep (default: CPUs).")
@click.option("--sample", is_flag=True, help="Read a few random ranges per shard to catch zero-filled holes.")
@click.option("--hf-repo", help="Hub repo id used in re-download commands (default: derived).")
@click.option("--measured-gib", type=click.FloatRange(0), help="Per-rank weight memory the engine logged (GiB), to compare with the projection (MEM005).")
@click.option("--engine-log", type=click.Path(dir_okay=False),
              help="Engine log to read the per-rank weight figure from (MEM005), instead of --measured-gib.")
@click.option("--measure-load", is_flag=True, help="Time a short read of one shard to estimate load time.")
@click.option("--nnodes", type=click.IntRange(1), help="Nodes in the deployment (multi-node mode).")
@click.option("--node-rank", type=click.IntRange(0), help="This node's rank (multi-node mode).")
@click.option("--dist-init-addr", help="HOST:PORT of the engine rendezvous (node rank 0).")
@click.option("--store-port", type=click.IntRange(1, 65535), help="Port of k3doctor's own store (default: engine port + 1).")
@click.option("--timeout", "cluster_timeout", type=click.FloatRange(1, 3600), default=60.0, show_default=True,
              help="Seconds to wait for the other nodes and for the bootstrap test.")
@click.option("--token", help="Run token shared by the nodes of one preflight (default: printed by rank 0).")
@click.option("--nccl", is_flag=True, help="Also run an NCCL all-reduce across the local GPUs.")
@click.option("--gloo-ifname", help="Interface for the Gloo bootstrap test (default: GLOO_SOCKET_IFNAME or the route to the head).")
@click.option("--bind-all", is_flag=True, help="Let the store listen on all addresses, not just the selected NIC.")
@click.option("--local", "local_only", is_flag=True, help="Skip the multi-node rendezvous even if the launch is multi-node.")
@click.option("--select", multiple=True, help="Only these codes, prefixes or families (GPU, NET001, CKPT00).")
@click.option("--ignore", multiple=True, help="Skip these codes, prefixes or families.")
@format_option(list(REPORTERS), "rich", "Report format (sarif: GitHub code scanning; gitlab: code quality).")
@output_option("Write the report to FILE.")
@click.option("--report", "html_report", type=click.Path(dir_okay=False),
              help="Also write a self-contained HTML report (findings, per-rank memory chart, facts) to FILE.")
@click.option("--fail-on", type=click.Choice(["error", "warning", "info"]), default="error", show_default=True,
              help="Lowest severity that makes the exit code 1.")
@click.option("--strict", is_flag=True, help="Exit 4 when a selected check was skipped or could not run.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per code (after the report).")
@config_options
@click.option("-v", "--verbose", is_flag=True, help="Show every check's status and crash tracebacks.")
@click.argument("launch", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def command(ctx: click.Context, **kw: Any) -> None:
    """Run the preflight checks.

    \b
    Live on this node:        k3doctor check -- sglang serve --model-path … --tp 16 …
    From a snapshot (CI):     k3doctor check --snapshot node0.json -- vllm serve …
    Against a GPU profile:    k3doctor check --target h200-141g -- vllm serve …
    Several nodes offline:    k3doctor check --snapshot a.json --snapshot b.json
    From a launch script:     k3doctor check --snapshot node0.json --launch-file deploy/launch.sh

    Settings not given here come from [tool.k3doctor] in pyproject.toml or a k3doctor.toml
    (nearest upward from the current directory; --config FILE, --isolated).
    """
    from .run_check import execute

    from .options import apply_config

    kw["config"] = apply_config(ctx, kw, CONFIG_KEYS)
    kw["launch_given"] = ctx.meta.get("k3doctor.dashdash", False)
    code = execute(kw)
    ctx.exit(code)
