"""The body of ``k3doctor check`` (separate from option parsing so it is easy to test and reuse)."""

from __future__ import annotations

import contextlib
import io
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterator

import click

from ..model import Severity
from ..session import InputError, SessionOptions, build_facts, load_snapshot_or_fail, merge_node_reports, node_label

if TYPE_CHECKING:  # pragma: no cover
    from ..facts import Facts


def _measured_from_log(path: str) -> float:
    """The largest per-rank weight figure in an engine log (streamed), or a usage error."""
    from ..memory.logparse import EngineLogError, read_engine_log_file

    try:
        fig = read_engine_log_file(path, need_weights=True)
    except EngineLogError as exc:
        raise click.UsageError(str(exc)) from None
    return float(fig.weights_gib or 0.0)


def _session_options(kw: dict[str, Any]) -> SessionOptions:
    if kw.get("engine_log") and kw.get("measured_gib") is None:
        kw["measured_gib"] = _measured_from_log(str(kw["engine_log"]))
    options = {
        "model_dir": kw.get("model_dir"),
        "deep": kw.get("deep", False),
        "manifest": kw.get("manifest"),
        "jobs": kw.get("jobs"),
        "sample": kw.get("sample", False),
        "hf_repo": kw.get("hf_repo"),
        "measure_load": kw.get("measure_load", False),
        "measured_gib": kw.get("measured_gib"),
        "dist_init_addr": kw.get("dist_init_addr"),
        "nnodes": kw.get("nnodes"),
        "node_rank": kw.get("node_rank"),
        "gpus_per_node": kw.get("gpus"),
    }
    hashing = bool(kw.get("deep") or kw.get("manifest"))
    return SessionOptions(
        probe_timeouts={"model": float(kw.get("deep_timeout") or 7200.0)} if hashing else {},
        snapshots=tuple(kw.get("snapshots") or ()),
        target=kw.get("target"),
        gpus=kw.get("gpus"),
        launch=tuple(kw.get("launch") or ()),
        launch_given=bool(kw.get("launch_given")),
        env_file=kw.get("env_file"),
        probe_timeout=float(kw.get("probe_timeout") or 20.0),
        options={k: v for k, v in options.items() if v is not None},
    )


@contextlib.contextmanager
def _progress(enabled: bool, opts: SessionOptions) -> Iterator[Callable[[str, str, Any], None] | None]:
    """Live feedback on stderr (TTY only): a bytes/rate/ETA bar while ``--deep`` hashes shards,
    else a spinner naming the running check (rich shows one live display at a time)."""
    if not enabled:
        yield None
        return
    if opts.options.get("deep") or opts.options.get("manifest"):
        from ..ckpt.progress import rich_progress

        with rich_progress("sha256") as callback:
            opts.options["progress"] = callback
            yield None
        return
    from rich.console import Console

    console = Console(file=sys.stderr)
    with console.status("starting…") as status:
        def on_event(kind: str, code: str, result: Any) -> None:
            if kind == "start":
                status.update(f"k3doctor: running {code}…")

        yield on_event


def execute(kw: dict[str, Any]) -> int:
    """Run ``check`` with parsed options; return the exit code."""
    _read_launch_file(kw)
    report = collect_report(kw).with_severities(kw.get("severity") or {})
    report.strict = bool(kw.get("strict"))
    if kw.get("config") is not None:
        report.config = dict(kw["config"])
    emit_report(report, kw.get("fmt") or "rich", kw.get("output"), bool(kw.get("verbose")))
    if kw.get("statistics"):
        from ..reporters.text import statistics_text

        # beside a machine-readable report on stdout the counts go to stderr
        to_stdout = (kw.get("fmt") or "rich") in ("rich", "markdown") and not kw.get("output")
        (sys.stdout if to_stdout else sys.stderr).write(statistics_text(report))
    if kw.get("html_report"):
        from ..reporters.html import write_html_report

        write_html_report(report, str(kw["html_report"]), kw)
    return int(report.exit_code)


def _read_launch_file(kw: dict[str, Any]) -> None:
    """``--launch-file FILE``: the launch command comes from a launch script."""
    path = kw.get("launch_file")
    if not path:
        return
    if kw.get("launch"):
        raise click.UsageError("--launch-file and a launch command after `--` are alternatives; give one")
    import os

    from ..launch import LaunchError
    from ..launchfile import read_launch_file

    live = not kw.get("snapshots") and not kw.get("target")
    try:
        kw["launch"] = tuple(read_launch_file(str(path), dict(os.environ) if live else None))
    except LaunchError as exc:
        raise click.UsageError(str(exc)) from None
    kw["launch_given"] = True


def collect_report(kw: dict[str, Any]) -> Any:
    """Build the facts, run the selected checks and return the report (raises click.UsageError)."""
    from ..registry import registry
    from ..runner import run_checks
    from ..selection import SelectionError, apply_selection, split_selectors

    reg = registry()
    try:
        selected = apply_selection(reg.checks, split_selectors(kw.get("select")), split_selectors(kw.get("ignore")))
    except SelectionError as exc:
        raise click.UsageError(str(exc)) from None
    if not selected:
        raise click.UsageError("--select/--ignore leave no check to run (see `k3doctor list`)")
    opts = _session_options(kw)
    fail_on = Severity.parse(kw.get("fail_on") or "error")
    fmt = kw.get("fmt") or "rich"
    interactive = fmt == "rich" and not kw.get("output") and _isatty(sys.stderr)
    try:
        with _progress(interactive, opts) as on_event:
            if len(opts.snapshots) > 1:
                report = _run_many(reg, selected, opts, fail_on, on_event)
            else:
                facts = build_facts(opts)
                _maybe_cluster(facts, kw, opts)
                report = run_checks(reg.checks, selected, facts, fail_on=fail_on, on_event=on_event,
                                    plugin_errors=reg.errors)
                report.node_facts = [("this node" if facts.live else facts.source, facts)]
    except InputError as exc:
        raise click.UsageError(str(exc)) from None
    report.meta.update(_meta(opts))
    if kw.get("launch_file"):
        report.meta["launch_file"] = str(kw["launch_file"])
    return report


def _run_many(reg: Any, selected: list[str], opts: SessionOptions, fail_on: Severity, on_event: Any) -> Any:
    from ..facts import Facts
    from ..runner import run_checks

    docs = [load_snapshot_or_fail(p) for p in opts.snapshots]
    per_node = []
    node_facts: list[tuple[str, Any]] = []
    node_codes = [c for c in selected if not c.startswith("CLU")]
    for i, doc in enumerate(docs):
        facts = _node_facts(opts, doc, i)
        report = run_checks(reg.checks, node_codes, facts, fail_on=fail_on, on_event=on_event,
                            plugin_errors=reg.errors)
        per_node.append((node_label(doc, i), report))
        node_facts.append((node_label(doc, i), facts))
    clu_codes = [c for c in selected if c.startswith("CLU")]
    cluster_report = None
    if clu_codes:
        cluster_facts = Facts({}, live=False, source="snapshots")
        try:
            from ..cluster import from_snapshots

            cluster_facts.set("cluster", from_snapshots([_with_launch(doc, opts, i) for i, doc in enumerate(docs)]))
        except ImportError:
            pass
        cluster_report = run_checks(reg.checks, clu_codes, cluster_facts, fail_on=fail_on, on_event=on_event)
    merged = merge_node_reports(per_node, cluster_report)
    merged.node_facts = node_facts
    return merged


def _node_facts(opts: SessionOptions, doc: dict[str, Any], index: int) -> Any:
    """Facts of one node; a launch given on the command line gets that node's rank.

    With several snapshots and one launch command, the command is the one every node runs; its
    ``--node-rank`` is taken from the snapshot's position (first file = rank 0), as documented.
    A launch recorded in the snapshot itself is used as is when no launch is given.
    """
    facts = build_facts(opts, snapshot_doc=doc)
    if opts.launch and len(opts.snapshots) > 1:
        launch = dict(facts.known()["launch"])
        launch["node_rank"] = index
        facts.set("launch", launch)
    return facts


def _with_launch(doc: dict[str, Any], opts: SessionOptions, index: int) -> dict[str, Any]:
    """A snapshot document whose facts include the launch given on the command line."""
    facts = _node_facts(opts, doc, index)
    out = dict(doc)
    out["facts"] = facts.known()
    return out


def _maybe_cluster(facts: "Facts", kw: dict[str, Any], opts: SessionOptions) -> None:
    """Live multi-node mode: rendezvous with the other nodes and set the ``cluster`` fact."""
    if not facts.live or kw.get("local_only"):
        return
    launch = facts.known().get("launch") or {}
    nnodes = kw.get("nnodes") or launch.get("nnodes") or 1
    if nnodes <= 1 and not kw.get("nccl"):
        return
    addr = kw.get("dist_init_addr") or launch.get("dist_init_addr")
    if nnodes <= 1 and not addr:  # `--nccl` on one node: a private loopback store
        addr = f"127.0.0.1:{_free_port()}"
    if not addr and launch.get("head_host") and launch.get("head_port"):  # vLLM --master-addr/--master-port
        addr = f"{launch['head_host']}:{launch['head_port']}"
    rank = kw.get("node_rank") if kw.get("node_rank") is not None else launch.get("node_rank", 0)
    if not addr:
        if kw.get("nnodes"):
            raise InputError("multi-node mode needs --dist-init-addr HOST:PORT (or one in the launch command)")
        # a multi-node launch without a rendezvous address (e.g. Ray-placed vLLM): check this node only
        facts.set_missing_reason("cluster", f"the launch spans {nnodes} nodes but names no rendezvous address; "
                                            "pass --dist-init-addr HOST:PORT for the multi-node checks")
        return
    try:
        from ..cluster import ClusterOptions, ClusterUnavailable, gather
    except ImportError as exc:
        raise InputError(f"multi-node mode is not available in this build ({exc})") from None
    from .. import __version__
    from ..facts import snapshot_document

    facts.collect()
    local = snapshot_document(facts, __version__)
    copts = ClusterOptions(
        nnodes=int(nnodes), node_rank=int(rank or 0), dist_init_addr=str(addr), store_port=kw.get("store_port"),
        timeout=float(kw.get("cluster_timeout") or 60.0), token=kw.get("token"), nccl=bool(kw.get("nccl")),
        bind_all=bool(kw.get("bind_all")), gloo_ifname=kw.get("gloo_ifname"),
    )

    def say(msg: str) -> None:
        sys.stderr.write(f"k3doctor: {msg}\n")
        sys.stderr.flush()

    try:
        facts.set("cluster", gather(local, copts, say))
    except ClusterUnavailable as exc:
        # degrade, don't abort: every local check still runs; the cross-node ones are skipped with
        # the install hint as their reason (and fail the gate under --strict)
        say("cross-node checks skipped (torch.distributed is not available here; the report gives the install hint)")
        facts.set_missing_reason("cluster", str(exc))


def _free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _meta(opts: SessionOptions) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if opts.snapshots:
        meta["snapshots"] = list(opts.snapshots)
    if opts.target:
        meta["target"] = opts.target
    if opts.launch:
        meta["launch"] = " ".join(opts.launch)
    return meta


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def emit_report(report: Any, fmt: str, output: str | None, verbose: bool) -> None:
    """Render the report to stdout or to ``output`` (no line ends in padding)."""
    from ..cli import color_enabled
    from ..reporters import get_reporter

    reporter = get_reporter(fmt)
    out = sys.stdout  # click.get_text_stream is deprecated (Click 8.5); CliRunner swaps sys.stdout too
    color = color_enabled(out) if fmt == "rich" and not output else False
    buf = io.StringIO()
    reporter.render(report, buf, color=color, verbose=verbose)
    text = buf.getvalue()
    if not color:  # text from input (log lines, flags, paths) must not act on a terminal or a viewer
        from ..termsafe import sanitize

        text = sanitize(text)
    if not output:
        out.write(text if color else "\n".join(line.rstrip() for line in text.split("\n")))
        return
    from .options import write_text_output

    c = report.counts()
    write_text_output(text, output, f"{fmt} report ({c['error']} errors, {c['warning']} warnings; "
                                              f"exit {report.exit_code})")
