"""Fold prose to a width without ever cutting a command.

Text is split into atoms that are never broken: a backtick span, a quoted word (``"$(k3doctor
env)"``, ``'eth0'``), a command run (``export A=b``, ``hf download … --force-download``) and a
flag with its value (``--tensor-parallel-size 16``). Lines are filled greedily with atoms; an atom
wider than the line gets a line of its own and runs past the width, whole, so it can be copied.
No line ends in spaces and nothing is replaced by ``…``.
"""

from __future__ import annotations

import re

__all__ = ["atoms", "fold", "fold_command"]

#: words that start a shell command run in a fix
COMMAND_WORDS = frozenset({
    "export", "eval", "unset", "ulimit", "hf", "huggingface-cli", "rsync", "k3doctor", "pip", "sysctl", "mount",
    "sudo", "python", "python3", "nvidia-smi", "systemctl", "modprobe", "sglang", "vllm", "docker", "kubectl",
    "srun", "chmod", "mkdir", "rm", "ln", "cp", "mv", "sbatch", "ip", "nvidia-persistenced", "dcgmi",
})
#: words that end a command run (the prose resumes)
_STOP = frozenset({"—", "–", "-", "--", "or", "and", "then", "on", "to", "for", "in", "if", "before", "after", "instead",
                   "so", "when", "where", "which", "as", "at", "is", "are", "that", "once", "every", "each",
                   "with", "from", "of", "than", "but", "not", "per"})
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _words(text: str) -> list[str]:
    """Split on spaces outside backticks, quotes and ``$(…)``; falls back to plain words when a
    quote never closes (prose apostrophes)."""
    out: list[str] = []
    cur: list[str] = []
    quote = ""
    depth = 0
    i = 0
    while i < len(text):
        ch = text[i]
        at_start = not cur or cur[-1] in "=("
        if quote:
            if ch == quote:
                quote = ""
        elif ch == "`" or (ch in "\"'" and at_start):
            quote = ch
        elif text.startswith("$(", i):
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
        if ch == " " and not quote and not depth:
            if cur:
                out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    if cur:
        out.append("".join(cur))
    if quote or depth:
        return text.split()
    return out


def _is_flag(word: str) -> bool:
    word = word.lstrip("(`")
    return word.startswith("--") and len(word) > 2


def atoms(text: str, commands: bool = True) -> list[str]:
    """The unbreakable pieces of ``text``, in order (``commands=False``: quoted spans only, for
    prose that names no command)."""
    words = _words(text)
    if not commands:
        return words
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w in COMMAND_WORDS or _ASSIGN.match(w):
            run = [w]
            i += 1
            while i < len(words) and not _ends_run(run[-1], words[i]):
                run.append(words[i])
                i += 1
            out.append(" ".join(run))
            continue
        if _is_flag(w):
            run = [w]
            i += 1
            while i < len(words):
                last, nxt = run[-1], words[i]
                if last.endswith((",", ";", ")", ":")) or nxt in _STOP or (nxt.startswith("(") and not _is_flag(nxt)):
                    break
                if _is_flag(nxt):
                    run.append(nxt)
                elif _is_flag(last) and "=" not in last and not nxt.startswith("-"):
                    run.append(nxt)  # the flag's value
                else:
                    break
                i += 1
            out.append(" ".join(run))
            continue
        out.append(w)
        i += 1
    return out


def _ends_run(last: str, nxt: str) -> bool:
    return (last.endswith((",", ";", ":")) or (last.endswith(".") and not last.endswith("..."))
            or nxt in _STOP or nxt.startswith("(") or last.endswith(")") and not last.endswith('")'))


def fold(text: str, width: int, first: str = "", rest: str | None = None, *, lead: str = "",
         commands: bool = True) -> list[str]:
    """Lines of ``text`` (paragraphs kept) at most ``width`` wide unless one atom is wider.
    ``lead`` (a subject such as ``nodes=a,b rank=0:``) goes first, split only at spaces."""
    rest = first if rest is None else rest
    lines: list[str] = []
    prefix = first
    for n, paragraph in enumerate(text.split("\n")):
        line = prefix
        empty = True
        pieces = (lead.split() if lead and n == 0 else []) + atoms(paragraph, commands)
        for atom in pieces:
            if empty:
                line += atom
                empty = False
            elif len(line) + 1 + len(atom) <= width:
                line += " " + atom
            else:
                lines.append(line.rstrip())
                line = rest + atom
        lines.append(line.rstrip())
        prefix = rest
    return lines


def fold_command(words: list[str], width: int, first: str = "$ ", rest: str = "    ") -> list[str]:
    """A shell command as lines joined by `` \\`` continuations (copy-paste runs it as is)."""
    import shlex

    quoted = [shlex.quote(w) if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$", w) else
              w.split("=", 1)[0] + "=" + shlex.quote(w.split("=", 1)[1]) for w in words]
    units: list[str] = []  # a flag stays on the line of its value
    for w in quoted:
        if units and units[-1].startswith("-") and " " not in units[-1] and not w.startswith("-"):
            units[-1] += " " + w
        else:
            units.append(w)
    lines: list[str] = []
    line = first
    for w in units:
        if line.strip() and len(line) + 1 + len(w) + 2 > width:
            lines.append(line.rstrip() + " \\")
            line = rest + w
        else:
            line += ("" if line in (first, rest) else " ") + w
    lines.append(line.rstrip())
    return lines
