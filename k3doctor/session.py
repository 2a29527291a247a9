"""Build the fact set for a run from the three sources (live, snapshot, target) plus a launch.

Shared by ``check``, ``snapshot``, ``demo`` and ``plan`` so that every command understands the
same options the same way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .facts import DEFAULT_PROBE_TIMEOUT, Facts, SnapshotError, load_snapshot
from .launch import LaunchError, parse_launch
from .targets import TargetError, get_target, gpu_fact_for_target

__all__ = ["SessionOptions", "InputError", "build_facts", "node_label", "merge_node_reports"]


class InputError(ValueError):
    """Bad user input (snapshot, target, launch, options): a one-line message, exit code 2."""


@dataclass
class SessionOptions:
    """Everything the commands accept that shapes the facts."""

    snapshots: Sequence[str] = ()
    target: str | None = None
    gpus: int | None = None
    launch: Sequence[str] = ()
    launch_given: bool = False
    env_file: str | None = None
    probe_timeout: float = DEFAULT_PROBE_TIMEOUT
    probe_timeouts: dict[str, float] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)


def _parse_launch_fact(opts: SessionOptions, process_env: dict[str, str] | None) -> dict[str, Any] | None:
    if not opts.launch_given and not opts.launch:
        if opts.env_file:
            raise InputError("--env-file needs a launch command after `--`")
        return None
    try:
        return parse_launch(list(opts.launch), env_file=opts.env_file, process_env=process_env).to_dict()
    except LaunchError as exc:
        raise InputError(str(exc)) from None


def build_facts(opts: SessionOptions, *, snapshot_doc: dict[str, Any] | None = None) -> Facts:
    """Facts for one node. ``snapshot_doc`` overrides ``opts.snapshots`` (multi-snapshot runs)."""
    if opts.target and (opts.snapshots or snapshot_doc):
        raise InputError("--target and --snapshot are alternatives: a snapshot already says what the GPUs are")
    options = dict(opts.options)
    if snapshot_doc is None and opts.snapshots:
        snapshot_doc = load_snapshot_or_fail(opts.snapshots[0])
    if snapshot_doc is not None:
        facts = Facts(snapshot_doc["facts"], live=False, options=options,
                      source=f"snapshot {snapshot_doc.get('_path', '')}".strip(),
                      static_probes=_static_probes(options), probe_timeouts=opts.probe_timeouts)
        process_env = snapshot_doc["facts"].get("env") or {}
    elif opts.target:
        try:
            target = get_target(opts.target)
        except TargetError as exc:
            raise InputError(str(exc)) from None
        facts = Facts({"gpu": gpu_fact_for_target(target, opts.gpus)}, live=False, options=options,
                      source=f"target {target.name}", static_probes=_static_probes(options),
                      probe_timeouts=opts.probe_timeouts)
        process_env = {}
    else:
        facts = Facts(live=True, options=options, probe_timeout=opts.probe_timeout, source="live",
                      probe_timeouts=opts.probe_timeouts)
        process_env = dict(os.environ)
    launch = _parse_launch_fact(opts, process_env)
    if launch is not None:
        from .probes.host import engine_env

        facts.set("launch", launch)
        # the engine sees the launch's effective environment (process/snapshot env + pins)
        facts.set("env", engine_env(launch["env"]))
    return facts


def _static_probes(options: dict[str, Any]) -> tuple[str, ...]:
    """With ``--model DIR`` the checkpoint is read even in static mode: it is a path the user
    named, not state of the machine the snapshot or target describes."""
    return ("model",) if options.get("model_dir") else ()


def load_snapshot_or_fail(path: str) -> dict[str, Any]:
    """Load a snapshot or raise :class:`InputError` with the one-line reason."""
    try:
        doc = load_snapshot(path)
    except SnapshotError as exc:
        raise InputError(str(exc)) from None
    doc["_path"] = str(path)
    return doc


def node_label(doc: dict[str, Any], index: int) -> str:
    """``node=<hostname>`` (or the launch's node rank, or the file's position)."""
    facts = doc.get("facts", {})
    host = (facts.get("host") or {}).get("hostname") or doc.get("hostname")
    if host:
        return str(host)
    launch = facts.get("launch") or {}
    if "node_rank" in launch:
        return f"rank{launch['node_rank']}"
    return Path(str(doc.get("_path", f"snapshot{index}"))).stem


def merge_node_reports(per_node: list[tuple[str, Any]], cluster_report: Any | None) -> Any:
    """One report from several node reports.

    Findings are tagged with their node; a finding that is identical on several nodes is shown
    once with all their names (``nodes=a,b``). A check's status is its worst across nodes.
    """
    from dataclasses import replace

    from .model import CheckResult, Severity, Status
    from .runner import Report

    order = [Status.CRASH, Status.FAIL, Status.PASS, Status.SKIP]
    merged: dict[str, CheckResult] = {}
    where: dict[tuple[str, str, str, str], list[str]] = {}
    reasons: dict[str, dict[str, str]] = {}
    for label, report in per_node:
        for r in report.results:
            for f in r.findings:
                where.setdefault((f.code, f.subject, f.message, f.fix), []).append(label)
            if r.reason:
                reasons.setdefault(r.code, {})[label] = r.reason
            prev = merged.get(r.code)
            if prev is None:
                merged[r.code] = replace(r, findings=())
                continue
            status = min(prev.status, r.status, key=order.index)
            merged[r.code] = replace(prev, status=status, duration_s=prev.duration_s + r.duration_s)
    for label, report in per_node:
        for r in report.results:
            for f in r.findings:
                labels = where.get((f.code, f.subject, f.message, f.fix))
                if not labels or labels[0] != label:
                    continue  # already placed under its first node
                nodes = f"node={label}" if len(labels) == 1 else f"nodes={','.join(labels)}"
                tagged = replace(f, subject=nodes + (f" {f.subject}" if f.subject else ""))
                merged[r.code] = replace(merged[r.code], findings=merged[r.code].findings + (tagged,))
                where[(f.code, f.subject, f.message, f.fix)] = []
    for code, by_label in reasons.items():
        texts = set(by_label.values())
        if len(texts) == 1 and len(by_label) == len(per_node):
            reason = texts.pop() if len(per_node) == 1 else f"all nodes: {next(iter(by_label.values()))}"
        else:
            reason = "; ".join(f"{label}: {text}" for label, text in by_label.items())
        merged[code] = replace(merged[code], reason=reason)
    if cluster_report is not None:
        for r in cluster_report.results:
            merged[r.code] = r
    first = per_node[0][1] if per_node else cluster_report
    fail_on = first.fail_on if first is not None else Severity.ERROR
    duration = sum(rep.duration_s for _, rep in per_node) + (cluster_report.duration_s if cluster_report else 0.0)
    return Report(results=list(merged.values()), duration_s=duration, source=f"{len(per_node)} snapshots",
                  fail_on=fail_on)
