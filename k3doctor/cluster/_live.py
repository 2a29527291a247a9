"""Live mode: rendezvous through torch.distributed's TCPStore and build the ``cluster`` fact.

Protocol (all keys under ``k3doctor/<token>/``; every wait polls ``check`` with a deadline):

1. rank 0 binds a listening socket on the ``--dist-init-addr`` host (all addresses with
   ``bind_all``), hands it to ``TCPStore`` (``master_listen_fd``) and publishes the run token at
   ``k3doctor/token``; the other nodes connect (bounded) and adopt or compare the token.
2. each node claims ``rank/<r>`` (``add``: a second claim is an error), stores its snapshot at
   ``snap/<r>`` and marks ``joined/<r>``; rank 0 waits until all joined or the timeout, then
   publishes the ``roster``; every node reads the roster's snapshots.
3. clock: three rounds in which rank 0 releases ``clock/<k>/go`` while the others wait on it;
   each records when it woke and a store round trip; rank 0 publishes the offsets.
4. bootstrap: each node runs the Gloo all-reduce in a child (``_gloo_child``) over its chosen
   interface, publishes ``boot/<r>`` and reads the others'.
5. ``--nccl``: each node runs ``nccl_test`` over its local GPUs and publishes ``nccl/<r>``.
6. each node sets ``done/<r>``; rank 0 keeps the store up until all are done (bounded).
"""

from __future__ import annotations

import datetime
import json
import os
import secrets
import socket
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ._common import (
    CLOCK_SKEW_THRESHOLD_S,
    choose_gloo_interface,
    default_store_port,
    interface_ipv4,
    node_entry,
    parse_addr,
    resolve_host,
    tail,
)
from ._proc import child_env, last_json_line, run_child

if TYPE_CHECKING:  # pragma: no cover
    from . import ClusterOptions

__all__ = ["run_live"]

#: The clock source (tests replace it in a child process to simulate a skewed node).
_now: Callable[[], float] = time.time
POLL_S = 0.05
CLOCK_ROUNDS = 3
#: Extra seconds a node waits for the other nodes' results beyond their own bounded runs.
GRACE_S = 10.0


class _Abort(Exception):
    """Stop the protocol here; the message is already in ``errors``."""


def _listen_socket(candidates: list[tuple[socket.AddressFamily, str]], port: int) -> tuple[socket.socket | None, str, OSError | None]:
    """The first of ``(family, ip)`` that binds and listens on ``port``: (socket, ip, None), or
    (None, the last ip tried, its error)."""
    bind_ip, failure = "", None
    for family, bind_ip in candidates:
        s = socket.socket(family, socket.SOCK_STREAM)
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if bind_ip == "::":
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            s.bind((bind_ip, port))
            s.listen(512)
        except OSError as exc:
            s.close()
            failure = exc
            continue
        return s, bind_ip, None
    return None, bind_ip, failure


class _Live:
    def __init__(self, snapshot: dict[str, Any], opts: "ClusterOptions", progress: Callable[[str], None]) -> None:
        if opts.nnodes < 1:
            raise ValueError(f"--nnodes {opts.nnodes}: must be at least 1")
        if not 0 <= opts.node_rank < opts.nnodes:
            raise ValueError(f"--node-rank {opts.node_rank}: must be in 0..{opts.nnodes - 1} for --nnodes {opts.nnodes}")
        if not opts.timeout > 0:
            raise ValueError(f"--timeout {opts.timeout}: must be positive")
        self.snapshot = snapshot
        self.opts = opts
        self._progress = progress
        self.rank = opts.node_rank
        self.n = opts.nnodes
        self.host, self.engine_port = parse_addr(opts.dist_init_addr)
        self.port = opts.store_port or default_store_port(self.engine_port)
        if not 0 < self.port < 65536:
            raise ValueError(f"--store-port {self.port}: out of range")
        self.timeout = float(opts.timeout)
        self.token: str | None = opts.token or (secrets.token_hex(4) if self.rank == 0 else None)
        self.errors: list[str] = []
        self.missing: list[int] = []
        self.roster: list[int] = [self.rank]
        self.nodes: dict[int, dict[str, Any]] = {self.rank: node_entry(snapshot, self.rank)}
        self.store: Any = None
        self.bind = ""
        self.clock: dict[str, Any] = {"measured": False, "reason": "not measured", "threshold_s": CLOCK_SKEW_THRESHOLD_S, "nodes": []}
        self.bootstrap: dict[str, Any] = {"ran": False, "reason": "not run", "backend": "gloo", "ok": None, "nodes": [], "timeout_s": self.timeout}
        self.nccl: dict[str, Any] | None = None

    # -- helpers ----------------------------------------------------------------------------
    def progress(self, message: str) -> None:
        try:
            self._progress(message)
        except Exception:  # noqa: BLE001 - a broken callback must not break the run
            pass

    def key(self, name: str) -> str:
        return f"k3doctor/{self.token}/{name}"

    def where(self) -> str:
        return f"{self.host}:{self.port}"

    def wait_keys(self, keys: list[str], deadline: float, on_count: Callable[[int], None] | None = None) -> list[str]:
        """Poll until every key exists or ``deadline`` (monotonic); return the keys that exist."""
        last = -1
        while True:
            present = [k for k in keys if self.store.check([k])]
            if on_count is not None and len(present) != last:
                last = len(present)
                on_count(last)
            if len(present) == len(keys) or time.monotonic() >= deadline:
                return present
            time.sleep(POLL_S)

    def wait_roster(self, deadline: float, on_count: Callable[[int], None]) -> bool:
        """A non-zero rank waits for rank 0's roster, reporting how many nodes have joined so far."""
        last = -1
        while True:
            if self.store.check([self.key("roster")]):
                return True
            count = int(self.store.add(self.key("joined_count"), 0))
            if count != last:
                last = count
                on_count(count)
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_S)

    def get_json(self, key: str) -> Any:
        return json.loads(self.store.get(key).decode("utf-8"))

    # -- 1. the store -------------------------------------------------------------------------
    def open_store(self) -> None:
        import torch.distributed as dist

        td = datetime.timedelta(seconds=self.timeout)
        if self.rank == 0:
            ips = resolve_host(self.host)
            if self.opts.bind_all:
                candidates = [(socket.AF_INET6, "::"), (socket.AF_INET, "0.0.0.0")]
            elif not ips:
                self.errors.append(f"rank 0 cannot resolve the --dist-init-addr host {self.host!r}; the store has nowhere to listen")
                raise _Abort
            else:
                ip = next((a for a in ips if ":" not in a), ips[0])
                candidates = [(socket.AF_INET6 if ":" in ip else socket.AF_INET, ip)]
            sock, bind_ip, failure = _listen_socket(candidates, self.port)
            if sock is None:
                errno = getattr(failure, "errno", None)
                hint = (
                    "is this node the --dist-init-addr host? (start rank 0 there, or pass --bind-all)"
                    if errno == 99
                    else "another preflight or the engine already holds it; pick another with --store-port"
                    if errno == 98
                    else "check the address and port"
                )
                detail = getattr(failure, "strerror", None) or failure
                self.errors.append(f"rank 0 cannot listen on {bind_ip}:{self.port} for k3doctor's store: {detail} ({hint})")
                raise _Abort
            self.bind = f"[{bind_ip}]:{self.port}" if ":" in bind_ip else f"{bind_ip}:{self.port}"
            connect_host = "127.0.0.1" if self.opts.bind_all else bind_ip
            fd = sock.detach()  # the store owns (and closes) the listening socket from here on
            try:
                self.store = dist.TCPStore(
                    connect_host, self.port, None, True, timeout=td, wait_for_workers=False,
                    master_listen_fd=fd, use_libuv=True,
                )
            except Exception as exc:  # noqa: BLE001
                os.close(fd)
                self.errors.append(f"rank 0 could not start k3doctor's store on {self.bind}: {_first_line(exc)}")
                raise _Abort from None
            self.store.set("k3doctor/token", self.token)
            self.progress(f"run token {self.token}: the store listens on {self.bind} (give the other nodes --token {self.token} to be sure they join this run)")
            return
        self.progress(f"connecting to k3doctor's store at {self.where()} (hosted by rank 0)")
        try:
            self.store = dist.TCPStore(self.host, self.port, None, False, timeout=td)
        except Exception as exc:  # noqa: BLE001 - a network failure is data
            self.missing = [0]
            self.errors.append(
                f"could not reach k3doctor's store at {self.where()} within {self.timeout:g} s "
                f"(rank 0 hosts it: is `k3doctor check --nnodes {self.n} --node-rank 0` running on {self.host}, "
                f"and is TCP port {self.port} open between the nodes?): {_first_line(exc)}"
            )
            raise _Abort from None
        present = self.wait_keys(["k3doctor/token"], time.monotonic() + self.timeout)
        if not present:
            self.missing = [0]
            self.errors.append(f"the store at {self.where()} is not a k3doctor preflight's (no run token within {self.timeout:g} s)")
            raise _Abort
        theirs = self.store.get("k3doctor/token").decode("utf-8")
        if self.token and theirs != self.token:
            self.errors.append(
                f"the store at {self.where()} belongs to another preflight (its run token is {theirs}, this node was "
                f"given --token {self.token}); nothing was exchanged. Start all nodes with the same --token"
            )
            raise _Abort
        self.token = theirs
        self.progress(f"joined run {self.token}")

    # -- 2. join and exchange -----------------------------------------------------------------
    def join(self, started: float) -> None:
        me = self.nodes[self.rank]
        claims = self.store.add(self.key(f"rank/{self.rank}"), 1)
        if claims > 1:
            other = self.store.get(self.key(f"host/{self.rank}")).decode("utf-8", "replace") if self.store.check([self.key(f"host/{self.rank}")]) else "?"
            n = self.store.add(self.key("dups"), 1)
            self.store.set(self.key(f"dup/{n}"), json.dumps([self.rank, me["hostname"], other]))
            self.errors.append(f"node rank {self.rank} is already taken by {other} in run {self.token}; this node ({me['hostname']}) did not join. Give every node its own --node-rank")
            raise _Abort
        self.store.set(self.key(f"host/{self.rank}"), me["hostname"])
        self.store.set(self.key(f"snap/{self.rank}"), json.dumps(self.snapshot, default=str))
        self.store.set(self.key(f"joined/{self.rank}"), "1")
        self.store.add(self.key("joined_count"), 1)

        def count(k: int) -> None:
            self.progress(f"{k}/{self.n} nodes joined")

        if self.rank == 0:
            keys = [self.key(f"joined/{r}") for r in range(self.n)]
            present = self.wait_keys(keys, started + self.timeout, count)
            roster = sorted(int(k.rsplit("/", 1)[1]) for k in present)
            self.store.set(self.key("roster"), json.dumps(roster))
        else:
            # rank 0 publishes the roster at most `timeout` after it started, which was before we connected.
            got = self.wait_roster(time.monotonic() + self.timeout + GRACE_S, count)
            if not got:
                self.errors.append(f"rank 0 did not publish the list of joined nodes within {self.timeout + GRACE_S:g} s (did it stop?)")
                raise _Abort
            roster = [int(r) for r in self.get_json(self.key("roster"))]
            if self.rank not in roster:
                self.errors.append(f"this node (rank {self.rank}) joined after rank 0 stopped waiting ({self.timeout:g} s); start all nodes within --timeout of each other")
                raise _Abort
        self.roster = roster
        self.missing = [r for r in range(self.n) if r not in roster]
        for r in roster:
            if r != self.rank:
                self.nodes[r] = node_entry(self.get_json(self.key(f"snap/{r}")), r)
        if self.missing:
            self.errors.append(
                f"node rank{'s' if len(self.missing) > 1 else ''} {', '.join(map(str, self.missing))} never joined "
                f"within {self.timeout:g} s (expected {self.n} nodes, {len(roster)} joined)"
            )
        dups = self.store.add(self.key("dups"), 0)
        for i in range(1, dups + 1):
            if self.store.check([self.key(f"dup/{i}")]):
                rank, host, other = self.get_json(self.key(f"dup/{i}"))
                self.errors.append(f"node rank {rank} was claimed twice: by {other} (joined) and by {host} (turned away)")
        self.progress(f"exchanged facts with {len(roster)}/{self.n} nodes")

    # -- 3. clock -----------------------------------------------------------------------------
    def measure_clock(self) -> None:
        others = [r for r in self.roster if r != 0]
        if 0 not in self.roster or not others:
            self.clock["reason"] = "fewer than two nodes joined"
            return
        bound = min(self.timeout, 10.0)
        deadline = time.monotonic() + bound  # for all rounds together
        for k in range(CLOCK_ROUNDS):
            go = self.key(f"clock/{k}/go")
            if self.rank == 0:
                ready = self.wait_keys([self.key(f"clock/{k}/ready/{r}") for r in others], deadline)
                others = [int(key.rsplit("/", 1)[1]) for key in ready]  # a node that missed a round is not waited for again
                time.sleep(0.05)  # the others are inside wait() by now
                t0a = _now()
                self.store.set(go, "1")
                t0b = _now()
                self.store.set(self.key(f"clock/{k}/t0"), json.dumps([t0a, t0b]))
            else:
                self.store.set(self.key(f"clock/{k}/ready/{self.rank}"), "1")
                left = deadline + GRACE_S - time.monotonic()
                try:
                    self.store.wait([go], datetime.timedelta(seconds=max(0.1, left)))
                except Exception:  # noqa: BLE001 - rank 0 vanished; recorded below
                    break
                woke = _now()
                a = time.monotonic()
                self.store.get(go)
                rtt = time.monotonic() - a
                self.store.set(self.key(f"clock/{k}/t/{self.rank}"), json.dumps([woke, rtt]))
        result = self.key("clock/result")
        if self.rank == 0:
            everyone = [r for r in self.roster if r != 0]
            keys = [self.key(f"clock/{k}/t/{r}") for k in range(CLOCK_ROUNDS) for r in others]
            self.wait_keys(keys, time.monotonic() + 2.0)
            nodes: list[dict[str, Any]] = [{"node_rank": 0, "offset_s": 0.0, "uncertainty_s": 0.0, "rtt_s": 0.0}]
            for r in everyone:
                best: dict[str, Any] | None = None
                for k in range(CLOCK_ROUNDS):
                    tk, t0k = self.key(f"clock/{k}/t/{r}"), self.key(f"clock/{k}/t0")
                    if not (self.store.check([tk]) and self.store.check([t0k])):
                        continue
                    woke, rtt = self.get_json(tk)
                    t0a, t0b = self.get_json(t0k)
                    # woke = t_go(rank-0 clock) + one-way delay (0..rtt) + offset; late wake-ups only add.
                    raw = woke - (t0a + t0b) / 2
                    est = {"node_rank": r, "offset_s": round(raw - rtt / 2, 6), "uncertainty_s": round((t0b - t0a) / 2 + rtt / 2, 6), "rtt_s": round(rtt, 6), "_raw": raw}
                    if best is None or raw < best["_raw"]:
                        best = est
                if best is None:
                    nodes.append({"node_rank": r, "offset_s": None, "uncertainty_s": None, "rtt_s": None})
                else:
                    best.pop("_raw")
                    nodes.append(best)
            self.store.set(result, json.dumps(nodes))
        elif not self.wait_keys([result], deadline + 2 * GRACE_S):
            self.clock["reason"] = "rank 0 did not publish the clock measurement"
            return
        self.clock.update(measured=True, reason="", reference_rank=0, method="store release/wake-up against rank 0, best of 3", nodes=self.get_json(result))

    # -- 4. bootstrap ---------------------------------------------------------------------------
    def run_bootstrap(self) -> None:
        if self.missing:
            self.bootstrap["reason"] = f"node rank(s) {', '.join(map(str, self.missing))} never joined; a Gloo group needs all {self.n} nodes"
            return
        facts = self.nodes[self.rank]["facts"]
        ifname, source = choose_gloo_interface(facts, self.opts.gloo_ifname)
        shown = ifname or "(unset)"
        self.progress(f"bootstrap: Gloo all-reduce across {self.n} nodes, GLOO_SOCKET_IFNAME={shown} [{source}]")
        argv = [
            sys.executable, "-m", "k3doctor.cluster._gloo_child", "--host", self.host, "--port", str(self.port),
            "--prefix", self.key("gloo"), "--rank", str(self.rank), "--world", str(self.n), "--timeout", str(self.timeout),
        ]
        env = child_env({"GLOO_SOCKET_IFNAME": ifname})
        run = run_child(
            argv, env=env, timeout=self.timeout + 5, abort=self._peer_boot_failure,
            on_start=lambda pid: self.progress(f"bootstrap: test process {pid} started"),
        )
        parsed = last_json_line(run["stdout"]) or {}
        error = parsed.get("error")
        if run["aborted"]:
            error = f"stopped early: {run['aborted']}"
        elif run["timed_out"]:
            error = f"the Gloo test did not finish within {self.timeout + 5:g} s and was killed" + (f"; last output: {tail(run['stderr'], 3)}" if run["stderr"].strip() else "")
        elif not parsed:
            error = f"the Gloo test process exited with code {run['returncode']}: {tail(run['stderr'], 6) or '(no output)'}"
        mine = {
            "node_rank": self.rank,
            "hostname": self.nodes[self.rank]["hostname"],
            "ifname": ifname,
            "source": source,
            "ipv4": interface_ipv4(facts, ifname) if ifname else None,
            "ok": bool(parsed.get("ok")) and not run["timed_out"],
            "error": error,
            "stage": parsed.get("stage"),
            "seconds": run["seconds"],
            "init_s": parsed.get("init_s"),
            "allreduce_s": parsed.get("allreduce_s"),
            "returncode": run["returncode"],
            "timed_out": run["timed_out"],
            "aborted": bool(run["aborted"]),
        }
        self.progress(f"bootstrap: {'ok' if mine['ok'] else 'FAILED'} on this node in {run['seconds']:g} s")
        self.store.set(self.key(f"boot/{self.rank}"), json.dumps(mine))
        self.bootstrap.update(ran=True, reason="", timeout_s=self.timeout, nodes=self.collect("boot", mine, self.timeout + 5 + GRACE_S))
        self.bootstrap["ok"] = all(n.get("ok") for n in self.bootstrap["nodes"])

    def _peer_boot_failure(self) -> str | None:
        """While our Gloo child waits: has another node's Gloo test already failed? Then ours cannot
        complete either (the group needs every node) and waiting for the timeout gains nothing."""
        for r in self.roster:
            if r == self.rank:
                continue
            key = self.key(f"boot/{r}")
            try:
                if self.store.check([key]):
                    peer = self.get_json(key)
                    if not peer.get("ok"):
                        return f"node {r} ({peer.get('hostname')}) failed first: {str(peer.get('error'))[:300]}"
            except Exception:  # noqa: BLE001 - the store vanished; the timeout still bounds us
                return None
        return None

    def collect(self, what: str, mine: dict[str, Any], bound: float) -> list[dict[str, Any]]:
        keys = {r: self.key(f"{what}/{r}") for r in self.roster if r != self.rank}
        self.wait_keys(list(keys.values()), time.monotonic() + bound)
        out = [mine]
        for r, k in keys.items():
            if self.store.check([k]):
                out.append(self.get_json(k))
            else:
                out.append({"node_rank": r, "hostname": self.nodes[r]["hostname"], "ok": None, "error": f"no {what} result from this node within {bound:g} s"})
        return sorted(out, key=lambda e: int(e["node_rank"]))

    # -- 5. NCCL --------------------------------------------------------------------------------
    def run_nccl(self) -> None:
        if not self.opts.nccl:
            return
        bound = max(self.timeout, 60.0) * 2
        argv = [sys.executable, "-m", "k3doctor.cluster.nccl_test", "--json", "--timeout", str(bound), *self.opts.nccl_args]
        counts = {r: _gpu_count(self.nodes[r]["facts"]) for r in self.roster}
        across = self.n > 1 and not self.missing and self.store is not None
        scope = "all GPUs of all nodes (and each node's own GPUs)"
        if across and len({c for c in counts.values()}) > 1:
            across, scope = False, "each node's own GPUs (GPU counts differ across nodes, see CLU004)"
        if across:
            argv += ["--nnodes", str(self.n), "--node-rank", str(self.rank), "--store-host", self.host,
                     "--store-port", str(self.port), "--prefix", self.key("nccl_pg")]
        elif self.n > 1:
            scope = scope if "differ" in scope else "each node's own GPUs"
        self.progress(f"nccl: all-reduce across {scope}, one process per GPU")
        run = run_child(argv, env=child_env(), timeout=bound + 15)
        result = last_json_line(run["stdout"]) or {
            "ok": False,
            "error": ("killed after %g s" % (bound + 15)) if run["timed_out"] else f"exit code {run['returncode']}: {tail(run['stderr'], 6)}",
        }
        mine = {"node_rank": self.rank, "hostname": self.nodes[self.rank]["hostname"], "ok": bool(result.get("ok")), "result": result}
        peak = result.get("busbw_peak_GBps")
        self.progress(f"nccl: {'ok' if mine['ok'] else 'FAILED'}" + (f", local busbw {peak} GB/s" if peak is not None else ""))
        if self.store is not None and len(self.roster) > 1:
            self.store.set(self.key(f"nccl/{self.rank}"), json.dumps(mine))
            nodes = self.collect("nccl", mine, bound + 15 + GRACE_S)
        else:
            nodes = [mine]
        self.nccl = {"ran": True, "reason": "", "scope": scope, "across_nodes": across, "nodes": nodes}

    # -- 6. finish ------------------------------------------------------------------------------
    def finish(self) -> None:
        if self.store is None:
            return
        try:
            self.store.set(self.key(f"done/{self.rank}"), "1")
            if self.rank == 0:
                self.wait_keys([self.key(f"done/{r}") for r in self.roster], time.monotonic() + self.timeout)
        except Exception:  # noqa: BLE001
            pass

    def close(self) -> None:
        self.store = None

    def fact(self) -> dict[str, Any]:
        if self.nccl is None and self.opts.nccl:
            self.nccl = {"ran": False, "reason": "the run stopped before the NCCL test (see errors)", "nodes": []}
        return {
            "mode": "live",
            "nnodes": self.n,
            "self_rank": self.rank,
            "token": self.token,
            "store": {"host": self.host, "port": self.port, "engine_port": self.engine_port, "bind": self.bind or None, "bind_all": self.opts.bind_all},
            "nodes": [self.nodes[r] for r in sorted(self.nodes)],
            "missing_ranks": list(self.missing),
            "errors": list(self.errors),
            "clock": self.clock,
            "bootstrap": self.bootstrap,
            "nccl": self.nccl,
        }


def _gpu_count(facts: dict[str, Any]) -> int | None:
    gpu = facts.get("gpu")
    if isinstance(gpu, Mapping) and gpu.get("ok") and isinstance(gpu.get("devices"), list):
        return len(gpu["devices"])
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def run_live(snapshot: dict[str, Any], opts: "ClusterOptions", progress: Callable[[str], None]) -> dict[str, Any]:
    """Implementation of :func:`k3doctor.cluster.gather`."""
    live = _Live(snapshot, opts, progress)
    started = time.monotonic()
    try:
        live.open_store()
        live.join(started)
        live.measure_clock()
        live.run_bootstrap()
        live.run_nccl()
        live.finish()
    except _Abort:
        if opts.nccl and live.nccl is None:
            live.nccl = {"ran": False, "reason": "the rendezvous failed (see errors)", "nodes": []}
    except (RuntimeError, OSError, ValueError) as exc:
        # torch.distributed store errors (a node or the store vanished mid-run) are data too.
        live.errors.append(f"the rendezvous broke off: {_first_line(exc)}")
    finally:
        live.close()
    return live.fact()
