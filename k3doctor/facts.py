"""Facts: the plain, JSON-serialisable data that probes produce and checks read.

Three sources give the same shape of facts, so every check runs unchanged on each:

* live probes on this node (each time-bounded, lazily run only when a selected check asks);
* a snapshot file written by ``k3doctor snapshot`` (``schema_version`` 1);
* a built-in ``--target`` GPU profile (static CI without hardware).

Probes are registered by fact name in :data:`PROBES` (``"module:function"``, imported only when
the fact is first needed) and through the ``k3doctor.probes`` entry-point group for plugins.
A probe is ``def probe(ctx: ProbeContext) -> dict`` and must return JSON-serialisable data.
"""

from __future__ import annotations

import importlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from .facttypes import as_json, typed
from .model import Skip

__all__ = [
    "SNAPSHOT_SCHEMA_VERSION",
    "PROBES",
    "DERIVED",
    "ProbeContext",
    "ProbeError",
    "ProbeTimeout",
    "Facts",
    "SnapshotError",
    "load_snapshot",
    "snapshot_document",
    "call_with_timeout",
]

SNAPSHOT_SCHEMA_VERSION = 1

#: fact name -> "module:function" of the probe that produces it on a live node.
PROBES: dict[str, str] = {
    "host": "k3doctor.probes.host:probe_host",
    "env": "k3doctor.probes.host:probe_env",
    "packages": "k3doctor.probes.packages:probe_packages",
    "gpu": "k3doctor.probes.gpu:probe_gpu",
    "net": "k3doctor.probes.net:probe_net",
    "mounts": "k3doctor.probes.fs:probe_mounts",
    "paths": "k3doctor.probes.fs:probe_paths",
    "limits": "k3doctor.probes.oslimits:probe_limits",
    "rendezvous": "k3doctor.probes.net:probe_rendezvous",
    "model": "k3doctor.probes.checkpoint:probe_model",
}

#: Derived facts: values computed once per run from other facts (``"module:function"``; the
#: function's parameters name the facts it combines, injected as for checks). They are available
#: in every mode (live, snapshot, target), never written to snapshots, and a derivation that
#: cannot be made (``Skip``) is remembered with its reason, so every check that needs it skips alike.
DERIVED: dict[str, str] = {
    "gpu_spec": "k3doctor.derived:derive_gpu_spec",
    "inventory": "k3doctor.derived:derive_inventory",
    "plan": "k3doctor.derived:derive_plan",
    "measured": "k3doctor.derived:derive_measured",
    "driver_cuda": "k3doctor.derived:derive_driver_cuda",
}

#: Seconds a single probe may run before it is abandoned (a wedged driver or stale NFS mount).
DEFAULT_PROBE_TIMEOUT = 20.0


class ProbeError(Exception):
    """A probe raised; carries the fact name and the original error text."""

    def __init__(self, fact: str, message: str) -> None:
        super().__init__(f"probe {fact!r} failed: {message}")
        self.fact = fact
        self.detail = message


class ProbeTimeout(ProbeError):
    """A probe did not return within its time limit."""


class SnapshotError(Exception):
    """A snapshot file is unreadable, malformed or of an unsupported schema version."""


@dataclass
class ProbeContext:
    """What a probe may know about the run: options from the command line and its time limit."""

    options: Mapping[str, Any] = field(default_factory=dict)
    timeout: float = DEFAULT_PROBE_TIMEOUT
    #: facts already known (a probe may read another fact through ``ctx.facts.get``)
    facts: "Facts | None" = None

    def option(self, name: str, default: Any = None) -> Any:
        value = self.options.get(name, default)
        return default if value is None else value


def call_with_timeout(fn: Callable[[], Any], timeout: float, what: str) -> Any:
    """Run ``fn`` in a daemon thread; raise :class:`ProbeTimeout` if it does not finish in time.

    A hung C call (NVML on a wedged driver, ``stat`` on a dead NFS server) cannot be killed from
    Python, but the daemon thread does not keep the process alive and the run goes on.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name=f"k3doctor-probe-{what}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise ProbeTimeout(what, f"no answer within {timeout:g} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _resolve(spec: str) -> Callable[..., Any]:
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


class Facts:
    """Lazy fact store handed to checks.

    ``get(name)`` returns a known fact, runs its probe (live mode) or raises :class:`Skip` with
    the reason it is unavailable. Probe failures raise :class:`ProbeError` once and are
    remembered, so every dependent check sees the same failure.
    """

    def __init__(
        self,
        values: Mapping[str, Any] | None = None,
        *,
        live: bool = False,
        options: Mapping[str, Any] | None = None,
        probe_timeout: float = DEFAULT_PROBE_TIMEOUT,
        probes: Mapping[str, str | Callable[..., Any]] | None = None,
        source: str = "",
        probe_timeouts: Mapping[str, float] | None = None,
        static_probes: tuple[str, ...] = (),
    ) -> None:
        self._values: dict[str, Any] = {k: typed(k, v) for k, v in (values or {}).items()}
        self.live = live
        self.options: dict[str, Any] = dict(options or {})
        self.probe_timeout = probe_timeout
        #: per-fact limits that replace ``probe_timeout`` (e.g. the model probe under ``--deep``)
        self.probe_timeouts: dict[str, float] = dict(probe_timeouts or {})
        self.probes: dict[str, str | Callable[..., Any]] = dict(PROBES if probes is None else probes)
        #: probes that still run in a static (snapshot/target) fact set: those that read a path the
        #: user named on the command line (``--model DIR``), not the machine's own state
        self.static_probes = frozenset(static_probes)
        self.derived: dict[str, str | Callable[..., Any]] = dict(DERIVED)
        self._derived_values: dict[str, Any] = {}
        self._skips: dict[str, str] = {}
        self.errors: dict[str, ProbeError] = {}
        self.durations: dict[str, float] = {}
        self.source = source or ("live" if live else "static")
        self._lock = threading.RLock()
        self._missing: dict[str, str] = {}

    # -- reading --------------------------------------------------------------------------
    def has(self, name: str) -> bool:
        """True when the fact is known or can be probed (without running the probe)."""
        return name in self._values or (self._probeable(name))

    def _probeable(self, name: str) -> bool:
        return name in self.derived or (name in self.probes and (self.live or name in self.static_probes))

    def known(self) -> dict[str, Any]:
        """The facts gathered so far, as JSON documents (derived facts are not included)."""
        return {k: as_json(v) for k, v in self._values.items()}

    def option(self, name: str, default: Any = None) -> Any:
        value = self.options.get(name, default)
        return default if value is None else value

    def get(self, name: str) -> Any:
        # No lock while probing: a probe runs in its own thread and may read other facts
        # through ``ctx.facts.get`` (the runner itself is single-threaded).
        if name in self._values:
            return self._values[name]
        if name in self._derived_values:
            return self._derived_values[name]
        if name in self.errors:
            raise self.errors[name]
        if name in self._skips:
            raise Skip(self._skips[name])
        if not self._probeable(name):
            raise Skip(self._why_missing(name))
        return self._probe(name)

    def set_missing_reason(self, name: str, reason: str) -> None:
        """Explain why a fact is absent (shown as the skip reason of the checks that need it)."""
        self._missing[name] = reason

    def _why_missing(self, name: str) -> str:
        if name in self._missing:
            return self._missing[name]
        hints = {
            "launch": "no launch command given (pass it after `--`)",
            "model": "no model directory (use --model DIR or a launch command with a local model path)",
            "cluster": "single node (multi-node checks need --nnodes/--dist-init-addr or several --snapshot files)",
            "plan": "no parallel plan (give a launch command or --tp/--ep)",
        }
        if name in hints:
            return hints[name]
        if self.source.startswith("target"):
            return f"a --target profile describes GPUs only; {name!r} needs a live run or a snapshot"
        return f"fact {name!r} is not in this {self.source} fact set"

    def _probe(self, name: str) -> Any:
        derived = name in self.derived and name not in self.probes
        spec = self.derived[name] if derived else self.probes[name]
        timeout = self.probe_timeouts.get(name, self.probe_timeout)
        ctx = ProbeContext(options=self.options, timeout=timeout, facts=self)
        started = time.perf_counter()
        try:
            fn = _resolve(spec) if isinstance(spec, str) else spec
            if derived:
                from .check import fact_params, inject

                params = fact_params(fn)
                # the facts it combines are gathered first, each under its own probe's limit; the
                # derivation is computation (and the header reads of a directory a probe already
                # answered for), run in this thread: the header fold forks its half-sum only from
                # the main thread, and a thread would halve its speed
                value = inject(fn, params, self)
            else:
                value = call_with_timeout(lambda: fn(ctx), timeout, name)
        except ProbeError as exc:
            if derived and exc.fact != name:
                raise  # a fact it combines failed: that fact's own error, not a second one
            self.errors[name] = exc if exc.fact == name else ProbeError(name, exc.detail)
            raise self.errors[name] from None
        except Skip as exc:
            if derived:
                self._skips[name] = exc.reason
            raise
        except Exception as exc:  # noqa: BLE001 - a crashing probe becomes an INT finding
            self.errors[name] = ProbeError(name, f"{type(exc).__name__}: {exc}")
            raise self.errors[name] from None
        finally:
            if not derived:
                self.durations[name] = time.perf_counter() - started
        if derived:
            self._derived_values[name] = value
        else:
            self._values[name] = value = typed(name, value)
        return value

    def set(self, name: str, value: Any) -> None:
        """Add or replace a fact (the CLI sets ``launch``, ``cluster``, target GPUs, …)."""
        with self._lock:
            self._values[name] = typed(name, value)
            self.errors.pop(name, None)
            if self._derived_values or self._skips:
                if name in self._derived_inputs():  # a derivation combines it: derive again on next use
                    self._derived_values.clear()
                    self._skips.clear()

    def _derived_inputs(self) -> frozenset[str]:
        """Every fact name a derivation's signature names."""
        from .check import fact_params

        names: list[str] = []
        for spec in self.derived.values():
            fn = _resolve(spec) if isinstance(spec, str) else spec
            required, optional = fact_params(fn)
            names.extend(required + optional)
        return frozenset(names)

    def collect(self, names: list[str] | None = None) -> dict[str, Any]:
        """Probe every named fact (default: all registered), swallowing per-probe errors."""
        for name in names or list(self.probes):
            try:
                self.get(name)
            except (ProbeError, Skip):
                pass
        return self.known()


# -- snapshots ------------------------------------------------------------------------------
def snapshot_document(facts: Facts, version: str) -> dict[str, Any]:
    """The JSON document ``k3doctor snapshot`` writes."""
    host = facts.known().get("host") or {}
    return {
        "schema_version": SNAPSHOT_SCHEMA_VERSION,
        "kind": "k3doctor.snapshot",
        "tool": "k3doctor",
        "version": version,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "hostname": host.get("hostname", ""),
        "facts": facts.known(),
        "probe_errors": {name: err.detail for name, err in facts.errors.items()},
        "probe_seconds": {name: round(s, 4) for name, s in facts.durations.items()},
    }


def load_snapshot(path: str | Path) -> dict[str, Any]:
    """Read and validate a snapshot file; raise :class:`SnapshotError` with a one-line reason."""
    from .jsondoc import load_versioned_json

    doc = load_versioned_json(path, kind="k3doctor.snapshot", schema_version=SNAPSHOT_SCHEMA_VERSION,
                              what="snapshot", remedy="re-create it with `k3doctor snapshot -o FILE`",
                              error=SnapshotError)
    if not isinstance(doc.get("facts"), dict):
        raise SnapshotError(f"{Path(path)}: snapshot has no \"facts\" object")
    from .schemacheck import load_schema, validate

    problems = validate(doc, load_schema("snapshot"), limit=4)
    if problems:
        (where, what), more = problems[0], len(problems) - 1
        also = f" (and {more}{'+' if more == 3 else ''} more)" if more else ""
        raise SnapshotError(f"{Path(path)}: {where} {what}{also}; this is not what `k3doctor snapshot` writes: "
                            "re-create it with `k3doctor snapshot -o FILE` or correct the field "
                            "(schema: k3doctor/data/schemas/snapshot.schema.json)")
    return doc
