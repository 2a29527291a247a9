"""LAUNCH family: the launch command itself (values that do not parse, flags k3doctor does not know)."""

from __future__ import annotations

import difflib
from typing import Iterator

from ..check import Check, module_checks
from ..launch import _FIELDS, _KNOWN_BOOL_FLAGS, _KNOWN_VALUE_FLAGS, LaunchSpec
from ..model import Finding, Severity


class CMD001(Check):
    """Launch command has malformed or contradictory values

    ## What it checks
    Every flag k3doctor interprets (parallel sizes, memory fraction, context length, node rank,
    …) must carry a value of the right kind: `--tp-size 16`, not `--tp-size sixteen`;
    `--mem-fraction-static 0.85`, not `85`; a node rank below `--nnodes`; two aliases of the same
    setting (`--tp` and `--tensor-parallel-size`) must agree.

    ## Why it matters
    The engine's argument parser rejects these only after the container started, or — worse —
    takes the last alias silently.

    ## How to fix
    Correct the value named in the finding.
    """

    def run(self, launch: LaunchSpec) -> Iterator[Finding]:
        for error in launch.errors:
            flag = error.split(" ", 1)[0].rstrip(":")
            yield self.finding(
                f"launch command: {error}",
                subject=f"flag={flag}",
                evidence={"engine": launch.engine, "flag": flag},
                fix=f"correct {flag} in the launch command",
            )


class CMD002(Check):
    """Launch command has flags k3doctor does not know

    ## What it checks
    Flags that are neither interpreted by k3doctor nor in its list of known engine flags. They
    are kept (and passed on to multi-node comparisons) but not checked. A close match to a known
    flag is suggested: a typo such as `--tp-szie` is otherwise only found by the engine.

    ## Why it matters
    A misspelt flag either stops the engine at start-up or is ignored, silently changing the
    deployment (`--mem-fraction-statc 0.8` leaves the default in place).

    ## How to fix
    Check the spelling against `sglang serve --help` / `vllm serve --help` for your version.
    """

    severity = Severity.INFO

    def run(self, launch: LaunchSpec) -> Iterator[Finding]:
        engine = launch.engine
        known = set(_KNOWN_VALUE_FLAGS.get(engine, ())) | set(_KNOWN_BOOL_FLAGS.get(engine, ()))
        for _kind, per_engine in _FIELDS.values():
            known.update(per_engine.get(engine, ()))
        candidates = sorted(known)
        plain: list[str] = []
        for i, flag in enumerate(dict.fromkeys(str(f) for f in launch.unknown_flags)):
            close = difflib.get_close_matches(flag, candidates, n=1, cutoff=0.8) if i < TYPO_LIMIT else []
            if close:
                yield self.finding(
                    f"{flag} is not a {engine} flag k3doctor knows; did you mean {close[0]}?",
                    subject=f"flag={flag}",
                    evidence={"engine": engine, "flag": flag, "suggestion": close[0]},
                    fix=f"replace {flag} with {close[0]} if that was meant",
                    severity=Severity.WARNING,
                )
            else:
                plain.append(flag)
        if len(plain) > PER_FLAG_LIMIT:  # a command of hundreds of unknown flags: one finding, not hundreds
            shown = ", ".join(plain[:PER_FLAG_LIMIT])
            yield self.finding(
                f"{len(plain)} flags are not interpreted by k3doctor (kept, not checked): {shown}, "
                f"… (+{len(plain) - PER_FLAG_LIMIT} more)",
                subject="flags=uninterpreted",
                evidence={"engine": engine, "flags": len(plain)},
                fix=f"none needed if `{engine} serve --help` lists them; otherwise check that the command is "
                    f"a {engine} launch",
            )
            return
        for flag in plain:
            yield self.finding(
                f"{flag} is not interpreted by k3doctor (kept, not checked)",
                subject=f"flag={flag}",
                evidence={"engine": engine, "flag": flag},
                fix=f"none needed if `{engine} serve --help` lists {flag}",
            )


#: more uninterpreted flags than this become one finding
PER_FLAG_LIMIT = 20
#: close-match suggestions looked up for at most this many flags (difflib is ~1 ms a flag)
TYPO_LIMIT = 100


#: this module's family: (code prefix, description shown by `k3doctor list`, display order)
FAMILY = ('CMD', 'the launch command itself (values that do not parse, unknown flags)', 10)
CHECKS = module_checks(globals())
