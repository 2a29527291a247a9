"""Child processes of the multi-node preflight: bounded, killable, never left behind.

A child runs in its own session (so a hung Gloo/NCCL call can be killed with its whole process
group) and arms ``PR_SET_PDEATHSIG`` itself (so it dies with its parent even when the parent is
killed hard). Ctrl-C in the parent kills the child group before the interrupt propagates.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

__all__ = ["run_child", "child_env", "arm_parent_death_signal", "last_json_line", "kill_group"]

PARENT_PID_VAR = "K3DOCTOR_PARENT_PID"


def child_env(extra: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """This process's environment for a ``python -m k3doctor.cluster...`` child: k3doctor importable
    (also from a source tree), the parent's pid for the death signal, ``extra`` applied (``None``
    removes a variable)."""
    env = dict(os.environ)
    pkg_root = str(Path(__file__).resolve().parents[2])
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if pkg_root not in parts:
        env["PYTHONPATH"] = os.pathsep.join([pkg_root, *parts])
    env[PARENT_PID_VAR] = str(os.getpid())
    env.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    for key, value in (extra or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def arm_parent_death_signal() -> None:
    """In a child: die (SIGKILL) when the parent dies; exit at once if it is already gone."""
    expected = os.environ.get(PARENT_PID_VAR)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except Exception:  # noqa: BLE001 - best effort; the parent still kills the group
            pass
    if expected and expected.isdigit() and os.getppid() != int(expected):
        os._exit(70)


def kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the child's process group (it leads its own session) and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - a process in D state
        pass


def run_child(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout: float,
    on_start: Callable[[int], None] | None = None,
    abort: Callable[[], str | None] | None = None,
) -> dict[str, Any]:
    """Run ``argv`` for at most ``timeout`` seconds; return ``{returncode, stdout, stderr,
    timed_out, aborted, seconds, pid}``. ``abort`` is polled while the child runs: a non-empty
    answer kills it early (and becomes ``aborted``). On timeout or any exception (Ctrl-C
    included) the child's whole process group is killed first."""
    started = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env=dict(env),
        start_new_session=True,
    )
    timed_out = False
    aborted: str | None = None
    deadline = started + max(0.1, timeout)
    try:
        if on_start is not None:
            on_start(proc.pid)
        while True:
            try:
                out, err = proc.communicate(timeout=min(0.25, max(0.01, deadline - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    timed_out = True
                elif abort is not None:
                    aborted = abort() or None
                if timed_out or aborted:
                    kill_group(proc)
                    try:
                        out, err = proc.communicate(timeout=5)
                    except (subprocess.TimeoutExpired, ValueError):  # pragma: no cover
                        out, err = "", ""
                    break
    except BaseException:
        kill_group(proc)
        raise
    # The leader exited; anything it left in its group goes too.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return {
        "returncode": proc.returncode,
        "stdout": out or "",
        "stderr": err or "",
        "timed_out": timed_out,
        "aborted": aborted,
        "seconds": round(time.monotonic() - started, 3),
        "pid": proc.pid,
    }


def last_json_line(text: str) -> dict[str, Any] | None:
    """The last stdout line that parses as a JSON object (children print their result last)."""
    for line in reversed((text or "").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    return None
