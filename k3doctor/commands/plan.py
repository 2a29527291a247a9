"""``k3doctor plan``: per-rank GPU memory projection for a model and a parallel plan."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click

from ..launch import LaunchSpec
from ..targets import MAX_GPUS_PER_NODE
from ..units import NVML_IDLE_RESERVE
from .check import DashDashCommand
from .options import captured_output, format_option, output_option

if TYPE_CHECKING:
    from ..facts import Facts


def _fail(msg: str) -> NoReturn:
    raise click.UsageError(msg)


class _Crashed(click.ClickException):
    """k3doctor itself broke while projecting (a bug, not bad input): one line, exit 3."""

    exit_code = 3

    @classmethod
    def of(cls, model_ref: Any, exc: Any) -> "_Crashed":
        return cls(f"{model_ref}: the projection crashed ({exc.detail}); please report it with the config.json")


@click.command(cls=DashDashCommand, context_settings={"max_content_width": 100})
@click.option("--model", "model", help="Model directory (shard headers / config.json), a config.json, or a known "
              "Hub id (moonshotai/Kimi-K3) for planning before download.")
@click.option("--engine", type=click.Choice(["sglang", "vllm"]), help="Serving engine (default: from the launch "
              "command, else sglang).")
@click.option("--tp", type=int, help="Tensor-parallel size.")
@click.option("--ep", type=int, help="Expert-parallel size (vLLM: > 1 means --enable-expert-parallel).")
@click.option("--pp", type=int, help="Pipeline-parallel size.")
@click.option("--dp", type=int, help="Data-parallel size.")
@click.option("--enable-dp-attention", is_flag=True, default=None, help="SGLang DP attention (attention-TP = tp/dp).")
@click.option("--dcp", type=int, help="Decode-context-parallel size (shards the MLA KV cache).")
@click.option("--nnodes", type=int, help="Number of nodes.")
@click.option("--gpus", "--gpus-per-node", "gpus_per_node", type=click.IntRange(1, MAX_GPUS_PER_NODE),
              help="GPUs per node (default: the GPU profile's node size); alias --gpus-per-node.")
@click.option("--target", "--gpu", "gpu_name", metavar="GPU",
              help="GPU type for static planning (h200, h100, b200, …; see `k3doctor list --targets`); alias --gpu.")
@click.option("--snapshot", type=click.Path(dir_okay=False), help="Take the GPU from a `k3doctor snapshot` file.")
@click.option("--context", type=int, help="Requested context length (tokens per request).")
@click.option("--concurrency", type=int, help="Concurrent requests to size the KV cache for (default 1).")
@click.option("--kv-cache-dtype", help="KV cache dtype (auto, bf16, fp8_e4m3, fp8, …).")
@click.option("--mem-fraction", type=float, help="--mem-fraction-static (SGLang) / --gpu-memory-utilization (vLLM).")
@click.option("--search", "do_search", is_flag=True, help="Enumerate plans for the GPU type and rank those that fit.")
@click.option("--top", type=click.IntRange(1, 1000), default=10, show_default=True, help="With --search: plans shown.")
@click.option("--max-nodes", type=click.IntRange(1, 64), default=8, show_default=True, help="With --search: node limit.")
@click.option("--measured-gib", type=float, help="Measured per-rank weight GiB to compare (MEM005).")
@click.option("--engine-log", type=click.Path(dir_okay=False),
              help="Engine log: measured weights (MEM005) and, for vLLM, the KV sizing, set beside the projection.")
@format_option(["rich", "json"], "rich", "Output format; json: schema_version 1, bytes as ints.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@output_option()
@click.argument("launch", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def command(ctx: click.Context, model: str | None, engine: str | None, tp: int | None, ep: int | None, pp: int | None,
            dp: int | None, enable_dp_attention: bool | None, dcp: int | None, nnodes: int | None,
            gpus_per_node: int | None, gpu_name: str | None, snapshot: str | None, context: int | None,
            concurrency: int | None, kv_cache_dtype: str | None, mem_fraction: float | None, do_search: bool,
            top: int, max_nodes: int, measured_gib: float | None, engine_log: str | None, fmt: str,
            as_json: bool, output: str | None, launch: tuple[str, ...]) -> None:
    """Project per-rank GPU memory: weights by role, load transient, KV cache / state, reserve.

    The launch command after `--` supplies what it contains (engine, parallel sizes, memory
    fraction, context, load format, MoE backend); options given here override it. Exit code 1
    when the plan does not fit.
    """
    with captured_output(output, "the plan"):
        _plan(ctx, model, engine, tp, ep, pp, dp, enable_dp_attention, dcp, nnodes, gpus_per_node, gpu_name, snapshot,
              context, concurrency, kv_cache_dtype, mem_fraction, do_search, top, max_nodes, measured_gib,
              engine_log, fmt, as_json, launch)


def _check_numbers(counts: dict[str, int | None], measured_gib: float | None, mem_fraction: float | None) -> None:
    """Usage errors for sizes that cannot be (a count below 1, a NaN or infinite GiB figure)."""
    for name, val in counts.items():
        if val is not None and val < 1:
            _fail(f"{name} must be a positive integer (got {val})")
    if measured_gib is not None and not 0 <= measured_gib < 1 << 20:  # also refuses nan and inf
        _fail(f"--measured-gib must be a GiB figure such as 102.75 (got {measured_gib})")
    if mem_fraction is not None and not 0 < mem_fraction <= 1:
        _fail(f"--mem-fraction must be in (0, 1] (got {mem_fraction})")


def _plan(ctx: click.Context, model: str | None, engine: str | None, tp: int | None, ep: int | None,
          pp: int | None, dp: int | None, enable_dp_attention: bool | None, dcp: int | None, nnodes: int | None,
          gpus_per_node: int | None, gpu_name: str | None, snapshot: str | None, context: int | None,
          concurrency: int | None, kv_cache_dtype: str | None, mem_fraction: float | None, do_search: bool,
          top: int, max_nodes: int, measured_gib: float | None, engine_log: str | None, fmt: str,
          as_json: bool, launch: tuple[str, ...]) -> None:
    from ..facts import Facts, ProbeError
    from ..memory.placement import PlanError
    from ..memory.plan import plan_from_facts
    from ..model import Skip

    as_json = as_json or fmt == "json"
    _check_numbers({"--tp": tp, "--ep": ep, "--pp": pp, "--dp": dp, "--dcp": dcp, "--nnodes": nnodes,
                    "--gpus-per-node": gpus_per_node, "--context": context, "--concurrency": concurrency},
                   measured_gib, mem_fraction)
    over = {"tp": tp, "pp": pp, "dp": dp, "dcp": dcp, "nnodes": nnodes, "context_length": context,
            "kv_cache_dtype": kv_cache_dtype, "mem_fraction": mem_fraction, "enable_dp_attention": enable_dp_attention}
    launch_d, model_ref = _launch_fact(launch, engine, ep, over, model)
    gpu_fact, model_fact, gpn_default = _gpu_and_model_facts(gpu_name, snapshot)
    log_fig = _engine_log(engine_log)
    measured = measured_gib if measured_gib is not None else log_fig.weights_gib if log_fig is not None else None

    gpn = gpus_per_node or gpn_default
    if nnodes is None and "--nnodes" not in (launch_d.get("flags") or {}) and gpn:
        # vLLM multi-node runs (Ray) carry no --nnodes: infer whole nodes from the plan size
        world = LaunchSpec.from_json({k: v for k, v in launch_d.items() if k != "world_size"}).world_size
        launch_d["nnodes"] = max(int(launch_d.get("nnodes") or 1), -(-world // gpn))
    options: dict[str, Any] = {"model_dir": model_ref, "concurrency": concurrency, "gpus_per_node": gpn}
    if measured is not None:
        options["measured_gib"] = measured
    values: dict[str, Any] = {"launch": launch_d, "gpu": gpu_fact}
    if isinstance(model_fact, dict):
        values["model"] = model_fact
    facts = Facts(values, options=options, source="plan")

    # -- inventory up front: clear messages for bad input -----------------------------------
    try:
        inv = facts.get("inventory")  # the derived fact the MEM checks plan with (k3doctor.derived)
    except Skip as exc:
        _fail(exc.reason)
    except ProbeError as exc:
        raise _Crashed.of(model_ref, exc) from None

    if do_search:
        _search(inv, launch_d, facts, gpn or 8, max_nodes, top, as_json)
        return

    def _node_hint(text: str) -> str:
        if snapshot and not gpus_per_node and "add --nnodes" in text:
            return (f" (the snapshot's node has {gpn} GPU(s); to plan for nodes with more, pass "
                    "--gpus-per-node N)")
        return ""

    try:
        plan = plan_from_facts(facts)
    except Skip as exc:
        _fail(exc.reason + _node_hint(exc.reason))
    except PlanError as exc:
        _fail(f"impossible plan: {exc}{_node_hint(str(exc))}")
    except ValueError as exc:
        _fail(str(exc))
    except ProbeError as exc:
        raise _Crashed.of(model_ref, exc) from None
    _emit_plan(ctx, plan, _mem_findings(facts), log_fig, engine_log, as_json)


def _launch_fact(launch: tuple[str, ...], engine: str | None, ep: int | None, over: dict[str, Any],
                 model: str | None) -> tuple[dict[str, Any], str]:
    """The launch fact: the launch command after ``--`` (if any) with the options' overrides, and
    the model to plan."""
    launch_d: dict[str, Any] = {}
    if launch:
        from ..launch import LaunchError, parse_launch

        try:
            launch_d = parse_launch(list(launch)).to_dict()
        except (LaunchError, ValueError) as exc:
            _fail(f"launch command: {exc}")
        if launch_d.get("errors"):
            _fail("launch command: " + "; ".join(launch_d["errors"]))
    launch_d.setdefault("engine", "sglang")
    if engine:
        launch_d["engine"] = engine
    for k, v in over.items():
        if v is not None:
            launch_d[k] = v
    if ep is not None:
        launch_d["ep"] = ep
        launch_d["enable_expert_parallel"] = ep > 1
    launch_d.pop("gpus_per_node", None)
    model_ref = model or launch_d.get("model")
    if not model_ref:
        _fail("no model: pass --model DIR (or a config.json, or a known id such as moonshotai/Kimi-K3), "
              "or a launch command after --")
    launch_d["model"] = launch_d.get("model") or model_ref
    if any(k in launch_d for k in ("world_size", "attention_tp")) and any(v is not None for v in over.values()):
        # the overrides change the plan: let the typed fact derive these again
        launch_d.pop("world_size", None)
        launch_d.pop("attention_tp", None)
    return launch_d, str(model_ref)


def _gpu_and_model_facts(gpu_name: str | None, snapshot: str | None
                         ) -> tuple[dict[str, Any], dict[str, Any] | None, int | None]:
    """The ``gpu`` fact of a ``--target`` type or a snapshot, the snapshot's ``model`` fact (plans
    without the directory), and the GPUs per node they imply."""
    from ..memory.plan import resolve_gpu

    if gpu_name and snapshot:
        _fail("give either --target (--gpu) or --snapshot, not both")
    if gpu_name:
        try:
            g = resolve_gpu(gpu_name)
        except KeyError as exc:
            _fail(str(exc.args[0] if exc.args else exc))
        try:
            from ..targets import get_target

            gpn_default: int | None = get_target(gpu_name).gpus_per_node
        except Exception:  # noqa: BLE001 - extra (non-target) GPU types default to 8 per node
            gpn_default = 8
        device: dict[str, Any] = {"index": 0, "name": g.name, "memory_total": g.memory_total,
                                  "memory_free": g.memory_total - NVML_IDLE_RESERVE}
        if g.cc is not None:
            device["cc"] = list(g.cc)
        return {"ok": True, "source": "target", "devices": [device]}, None, gpn_default
    if snapshot:
        from ..facts import SnapshotError, load_snapshot

        try:
            doc = load_snapshot(snapshot)
        except SnapshotError as exc:
            _fail(str(exc))
        gpu_fact = (doc.get("facts") or {}).get("gpu")
        if not gpu_fact or not gpu_fact.get("devices"):
            _fail(f"{snapshot}: the snapshot has no GPU devices; plan statically with --gpu h200 (or another type)")
        return gpu_fact, (doc.get("facts") or {}).get("model"), len(gpu_fact["devices"])
    _fail("no GPU type: pass --gpu TYPE for static planning (h200, h100, b200, b300, …) "
          "or --snapshot FILE from `k3doctor snapshot`")


def _engine_log(engine_log: str | None) -> Any:
    """The measured figures of ``--engine-log`` (None without one)."""
    if not engine_log:
        return None
    from ..memory.logparse import EngineLogError, read_engine_log_file

    try:
        return read_engine_log_file(engine_log)
    except EngineLogError as exc:
        _fail(str(exc))


def _mem_findings(facts: "Facts") -> list[Any]:
    """The MEM checks' findings on these facts, through the runner (crashes isolated)."""
    from ..checks.mem import CHECKS
    from ..runner import run_checks

    report = run_checks({c.code: c for c in CHECKS}, [c.code for c in CHECKS], facts)
    return [f for r in report.results for f in r.findings]


def _emit_plan(ctx: click.Context, plan: Any, findings: list[Any], log_fig: Any, engine_log: str | None,
               as_json: bool) -> None:
    """Print the plan (JSON or the rich table and chart) and exit 1 when it does not fit."""
    from ..model import Severity

    log_doc: dict[str, Any] | None = None
    log_lines: list[str] = []
    if log_fig is not None:
        from ..memory.measured import compare

        log_doc, log_lines = compare(plan, log_fig)
    if as_json:
        doc = plan.to_dict()
        doc["findings"] = [f.to_dict() for f in findings]
        if log_doc is not None:
            doc["engine_log"] = log_doc
        click.echo(json.dumps(doc, indent=1))
    else:
        from ..memory.render import render_plan
        from ..termsafe import safe_console

        console = safe_console(highlight=False, soft_wrap=True)
        render_plan(plan, console, findings)
        if log_lines:
            from rich.markup import escape

            console.print(f"[bold]engine log[/bold] ({escape(str(engine_log))}):")
            for line in log_lines:
                console.print(f"  {escape(line)}")
    if any(f.severity >= Severity.ERROR for f in findings) or not plan.fits:
        ctx.exit(1)



def _search(inv: Any, launch_d: dict[str, Any], facts: "Facts", gpn: int, max_nodes: int, top: int, as_json: bool) -> None:
    from ..memory.plan import GpuSpec, device_cc
    from ..memory.search import search_plans

    dev = facts.get("gpu")["devices"][0]
    gpu = GpuSpec(str(dev.get("name")), int(dev["memory_total"]), dev.get("memory_free"), "facts", device_cc(dev))
    base = LaunchSpec.of(launch_d).placement(concurrency=facts.option("concurrency"))
    cands = search_plans(inv, base, gpu, gpus_per_node=gpn, max_nodes=max_nodes)
    if as_json:
        doc = {"schema_version": 1, "engine": base.engine, "gpu": {"name": gpu.name, "memory_total": gpu.memory_total},
               "candidates": [c.to_dict() for c in cands]}
        click.echo(json.dumps(doc, indent=1))
    else:
        from ..memory.render import render_search
        from ..termsafe import safe_console

        render_search(cands, safe_console(highlight=False, soft_wrap=True), top)
    if not any(c.fits for c in cands):
        sys.stderr.write("k3doctor: no plan fits; raise --max-nodes or use a larger GPU type\n")
        raise SystemExit(1)
