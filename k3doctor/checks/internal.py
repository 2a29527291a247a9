"""INT family: problems of k3doctor itself in this run (crashed probes, checks, plugins).

These checks run last, over the ``run`` fact the runner fills in with what went wrong. Any
INT001, INT002 or INT004 finding makes the exit code 3, so a CI gate never turns green because a
check silently vanished.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from ..check import Check, module_checks
from ..model import Finding, Severity

REPORT_URL = "https://github.com/k3doctor/k3doctor/issues"


class INT001(Check):
    """A probe crashed

    ## What it checks
    Every probe (NVML, /sys, /proc, the checkpoint reader, …) that raised an exception during
    this run. The checks that needed the probe's fact are skipped and name this code.

    ## Why it matters
    A crashed probe means k3doctor could not look at part of the machine; its checks did not
    run, so the result is incomplete. The exit code is 3 so that CI does not mistake an
    incomplete run for a clean one.

    ## How to fix
    Read the error in the finding. Most probe crashes are an unreadable file or a broken
    library install (e.g. `nvidia-ml-py` mismatched with the driver). Re-run with
    `--select` to skip the family, or report the error with `k3doctor snapshot -o node.json`
    attached.
    """

    def run(self, run: Mapping[str, Any]) -> Iterator[Finding]:
        for name, err in run["probe_errors"].items():
            if err["timeout"]:
                continue
            yield self.finding(
                f"probe {name!r} crashed: {err['detail']}",
                subject=f"probe={name}",
                evidence={"probe": name, "error": err["detail"]},
                fix=f"the checks that read {name!r} were skipped; fix the cause above, or "
                f"attach `k3doctor snapshot -o node.json` to a report at {REPORT_URL}",
            )


class INT002(Check):
    """A check crashed

    ## What it checks
    Every check that raised an unexpected exception (a bug in k3doctor or in a plugin).

    ## Why it matters
    The check's question stays unanswered. The run goes on, but the exit code is 3.

    ## How to fix
    Run with `-v` to see the traceback, and report it together with the snapshot
    (`k3doctor snapshot -o node.json`). Meanwhile `--ignore CODE` skips the broken check.
    """

    def run(self, run: Mapping[str, Any]) -> Iterator[Finding]:
        for crash in run["check_crashes"]:
            yield self.finding(
                f"check {crash['code']} crashed: {crash['error']}",
                subject=f"check={crash['code']}",
                evidence={"check": crash["code"], "error": crash["error"], "traceback": crash["traceback"]},
                fix=f"`--ignore {crash['code']}` skips it; report the traceback (`-v`) at {REPORT_URL}",
            )


class INT003(Check):
    """A probe timed out

    ## What it checks
    Probes that did not answer within `--probe-timeout` seconds (default 20).

    ## Why it matters
    A probe that hangs is itself a diagnosis: NVML blocking points at a wedged driver or a GPU
    that fell off the bus; `stat` blocking on a cache directory points at a dead NFS server.
    The engine would hang at the same place, only later and without a message.

    ## How to fix
    For `gpu`: check `dmesg` for Xid errors and `nvidia-smi`; restart the driver or the node.
    For `mounts`/`paths`/`model`: check the network filesystem (`mount`, `df -h` in the
    background) before launching. Raise `--probe-timeout` only if the machine is merely slow.
    """

    def run(self, run: Mapping[str, Any]) -> Iterator[Finding]:
        hints = {
            "gpu": "check `dmesg | grep -i xid` and `timeout 10 nvidia-smi`; a wedged driver needs a reset or reboot",
            "model": "the model directory does not answer: check its filesystem (`timeout 5 ls DIR`)",
            "mounts": "a mount does not answer: look for a dead NFS server (`timeout 5 df -h`)",
            "paths": "a cache directory does not answer: it is probably on a hung network filesystem",
        }
        for name, err in run["probe_errors"].items():
            if not err["timeout"]:
                continue
            yield self.finding(
                f"probe {name!r} did not answer: {err['detail']}",
                subject=f"probe={name}",
                evidence={"probe": name, "error": err["detail"]},
                fix=hints.get(name, "find what blocks (`py-spy dump` on k3doctor shows where); "
                "raise --probe-timeout only if the machine is merely slow"),
                severity=Severity.ERROR,
            )


class INT004(Check):
    """A check plugin failed to load

    ## What it checks
    Every entry point in the `k3doctor.checks` group (built-in families and third-party plugins)
    that failed to import, returned something that is not a list of checks, or declared a code
    that another family already uses.

    ## Why it matters
    Its checks did not run. A CI gate must never pass because a family vanished, so the exit
    code is 3.

    ## How to fix
    Reinstall the plugin (`pip install --force-reinstall PLUGIN`), or uninstall it. A code
    collision needs the plugin to use its own prefix.
    """

    def run(self, run: Mapping[str, Any]) -> Iterator[Finding]:
        for err in run["plugin_errors"]:
            yield self.finding(
                f"check family {err['entry_point']!r} failed to load: {err['error']}",
                subject=f"entry_point={err['entry_point']}",
                evidence={"entry_point": err["entry_point"], "error": err["error"]},
                fix="reinstall or uninstall the distribution that provides it (`pip show -f` finds it)",
            )


#: this module's family: (code prefix, description shown by `k3doctor list`, display order)
FAMILY = ('INT', 'k3doctor itself (crashed probes/checks, plugin failures, bad input)', 100)
CHECKS = module_checks(globals())
