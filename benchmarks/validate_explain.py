"""How often ``k3doctor explain`` names the right category on real errors, and how often it
raises a false alarm on real benign lines.

Corpus: ``fixtures/errors/errors.jsonl`` and ``benign.jsonl`` (real excerpts from public issue
threads, split by thread into ``dev`` and ``heldout``; see ``fixtures/errors/build_corpus.py``).
The KB and the fallback terms are written from the dev split only; the held-out split is the
generalisation figure.

For each excerpt, top-1 is the category of the first match ``explain`` reports (what a user
reads first). Baseline, measured in the same run: the same knowledge base without the fallback
classifier (signatures only), so the printed ratios say what the fallback adds.

    python benchmarks/validate_explain.py              # the table (text and log mode)
    python benchmarks/validate_explain.py --dev-only   # the dev split only (held-out rows not scored)
    python benchmarks/validate_explain.py --misses     # the dev split and its misses, to work on
    python benchmarks/validate_explain.py --json       # machine-readable
    python benchmarks/validate_explain.py --by-project # plus top-1 per source project (counts)
    python benchmarks/validate_explain.py --sample fixtures/errors/collected/r5_a.jsonl \
        fixtures/errors/collected/r5_benign.jsonl      # a fresh sample, scored before it is used
    python benchmarks/validate_explain.py --sample FILES... --json  # its first-score record (counts)
    python benchmarks/validate_explain.py --framings   # answers kept when pastes are framed/wrapped
    python benchmarks/validate_explain.py --ordering   # right category matched but not first
    python benchmarks/validate_explain.py --fallback-only  # the fallback alone on the dev errors
    python benchmarks/validate_explain.py --fallback-cv    # a learned category model vs the terms
    python benchmarks/validate_explain.py --sweeps     # the source sweeps: before their rules, now, gate

Held-out misses are deliberately not printed: reading them would be tuning on them.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from k3doctor.explain.scan import Scanner  # noqa: E402

CORPUS = ROOT / "fixtures" / "errors"


def load(name: str) -> list[dict]:
    text = (CORPUS / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def top1(scanner: Scanner, text: str, log_mode: bool) -> tuple[str | None, str | None, str]:
    """(category, id, confidence) of the first match, or (None, None, '') when nothing matched."""
    report = scanner.explain_bytes(text.encode("utf-8", "surrogateescape"), prefilter=log_mode)
    if not report.matches:
        return None, None, ""
    m = report.matches[0]
    return m.sig.category, m.sig.id, m.confidence


def alarms(scanner: Scanner, text: str, log_mode: bool) -> list[str]:
    report = scanner.explain_bytes(text.encode("utf-8", "surrogateescape"), prefilter=log_mode)
    return [m.sig.id for m in report.matches if not m.benign]


def evaluate(scanner: Scanner, errors: list[dict], benign: list[dict], log_mode: bool) -> dict:
    out: dict = {}
    for split in ("dev", "heldout"):
        rows = [r for r in errors if r["split"] == split]
        hits, silent, low, misses = 0, 0, 0, []
        for r in rows:
            cat, sid, conf = top1(scanner, r["excerpt"], log_mode)
            hits += cat == r["expected_category"]
            silent += cat is None
            low += conf == "low"
            if cat != r["expected_category"]:
                misses.append((r["id"], r["expected_category"], cat, sid, r["source"], r["excerpt"]))
        ben = [r for r in benign if r["split"] == split]
        flagged = [(r["id"], alarms(scanner, r["excerpt"], log_mode), r["excerpt"]) for r in ben]
        flagged = [f for f in flagged if f[1]]
        out[split] = {"rows": len(rows), "top1": hits, "silent": silent, "fallback": low,
                      "benign_rows": len(ben), "benign_alarms": len(flagged),
                      "misses": misses, "alarms": flagged}
    return out


def kb_at(ref: str) -> list:
    """The signatures of ``k3doctor/explain/kb/*.toml`` as committed at ``ref`` (git show)."""
    import subprocess

    from k3doctor.explain.kb import CATEGORIES, parse_kb_text

    sigs = []
    for cat in CATEGORIES:
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:k3doctor/explain/kb/{cat}.toml"],
                              capture_output=True, text=True, check=True).stdout
        sigs += parse_kb_text(text, cat)
    return sigs


#: The projects the explain bar is scored on; every other repository counts as "other".
CORE_PROJECTS = ("vllm-project/vllm", "sgl-project/sglang", "nvidia/nccl", "pytorch/pytorch",
                 "ray-project/ray", "deepseek-ai/deepep", "deepseek-ai/deepgemm", "flashinfer-ai/flashinfer")


def project_of(row: dict) -> str:
    """The row's repository when it is one of the core projects, else ``other``."""
    thread = row.get("thread")
    if not thread:
        from fixtures.errors.build_corpus import thread_key

        thread = thread_key(row["source"])
    repo = thread.split("#")[0]
    return repo if repo in CORE_PROJECTS else "other"


def by_project(scanner: Scanner, rows: list[dict], log_mode: bool) -> dict[str, tuple[int, int, int]]:
    """Per project: (top-1 hits, rows, silent) -- counts only, never row text."""
    out: dict[str, list[int]] = {}
    for r in rows:
        cat, _sid, _conf = top1(scanner, r["excerpt"], log_mode)
        c = out.setdefault(project_of(r), [0, 0, 0])
        c[0] += cat == r["expected_category"]
        c[1] += 1
        c[2] += cat is None
    return {k: (v[0], v[1], v[2]) for k, v in out.items()}


def print_by_project(label: str, counts: dict[str, tuple[int, int, int]]) -> None:
    order = [p for p in CORE_PROJECTS if p in counts] + (["other"] if "other" in counts else [])
    print(f"  {label}: " + ", ".join(
        f"{p.split('/')[-1]} {pct(counts[p][0], counts[p][1])} silent {counts[p][2]}" for p in order))


def pct(a: int, b: int) -> str:
    return f"{a}/{b} ({100 * a / b:.1f}%)" if b else "-"


def load_sample(paths: list[Path]) -> tuple[list[dict], list[dict]]:
    """The error rows and the benign rows of freshly collected files (as collected, not rebuilt); a
    file that cannot be read, or a line that is not a row, stops the script with its name and line."""
    rows: list[dict] = []
    for path in paths:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise SystemExit(f"validate_explain: cannot read {path}: {exc}")
        for no, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SystemExit(f"validate_explain: {path}:{no}: not a JSON row ({exc.msg}); "
                                 "each line is one object with the keys of fixtures/errors/build_corpus.py")
            if not isinstance(row, dict) or not {"source", "excerpt", "expected_category"} <= row.keys():
                raise SystemExit(f"validate_explain: {path}:{no}: a row needs 'source', 'excerpt' and "
                                 "'expected_category' (see fixtures/errors/build_corpus.py)")
            rows.append(row)
    return ([r for r in rows if r["expected_category"] != "benign"],
            [r for r in rows if r["expected_category"] == "benign"])


def split_of_sample(dropped: str = "dropped") -> "Callable[[dict], str]":
    """A function giving the split of the rebuilt corpus a freshly collected row fell on, looked up by
    row id in errors.jsonl / benign.jsonl (run ``python -m fixtures.errors.build_corpus`` first), or
    ``dropped`` for a row the build dropped as a verbatim duplicate of an existing excerpt."""
    from fixtures.errors.build_corpus import row_id

    split_of = {r["id"]: r["split"] for r in load("errors.jsonl") + load("benign.jsonl")}
    return lambda r: split_of.get(row_id(r["source"], r["excerpt"]), dropped)


def _round_of(paths: list[Path]) -> int | None:
    """The round number the collected files' names share (``r49_errors.jsonl``), else None."""
    got = {m.group(1) for m in (re.match(r"r(\d+)[a-z]?_", p.name) for p in paths) if m}
    return int(got.pop()) if len(got) == 1 and all(re.match(r"r\d+[a-z]?_", p.name) for p in paths) else None


def sample_score(paths: list[Path], flags: list[str] | None = None) -> dict:
    """The first-score record of freshly collected rows (``fixtures/errors/scores/rNN-first-score.json``
    shape, counts only): top-1, silent and benign alarms, per split of the rebuilt corpus (run
    ``python -m fixtures.errors.build_corpus`` first), per category and per project; text mode,
    with ``text_equals_log`` saying whether log mode answered every row the same. The collector adds
    ``round``, ``note`` and the corpus figures."""
    errors, benign = load_sample(paths)
    where = split_of_sample("dropped_as_duplicate")
    scanner = Scanner()
    splits = ("dev", "heldout", "dropped_as_duplicate")

    err: dict = {"rows": len(errors), "top1": 0, "silent": 0, **{s: {"rows": 0, "top1": 0, "silent": 0} for s in splits}}
    cats: dict[str, list[int]] = {}
    same = True
    for r in errors:
        cat = top1(scanner, r["excerpt"], False)
        same &= cat == top1(scanner, r["excerpt"], True)
        hit, silent = cat[0] == r["expected_category"], cat[0] is None
        for d in (err, err[where(r)]):
            d["top1"] += hit
            d["silent"] += silent
        err[where(r)]["rows"] += 1
        c = cats.setdefault(r["expected_category"], [0, 0])
        c[0] += hit
        c[1] += 1
    err["by_category"] = dict(sorted(cats.items()))
    err["by_project"] = {p.split("/")[-1]: [h, n] for p, (h, n, _s) in by_project(scanner, errors, False).items()}
    ben: dict = {"rows": len(benign), "alarms": 0, **{s: {"rows": 0, "alarms": 0} for s in splits}}
    for r in benign:
        flagged = bool(alarms(scanner, r["excerpt"], False))
        same &= flagged == bool(alarms(scanner, r["excerpt"], True))
        ben["alarms"] += flagged
        ben[where(r)]["rows"] += 1
        ben[where(r)]["alarms"] += flagged
    try:
        kb = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        kb = None
    args = flags if flags is not None else ["--sample", *map(str, paths), "--json"]
    return {"round": _round_of(paths), "kb_commit": kb,
            "command": "python -m fixtures.errors.build_corpus && python benchmarks/validate_explain.py " + " ".join(args),
            "errors": err, "benign": ben, "text_equals_log": same}


def score_sample(paths: list[Path], projects: bool = False, by_split: bool = False, as_json: bool = False,
                 flags: list[str] | None = None, dev_only: bool = False) -> int:
    """Top-1 (text and log mode) and benign alarms of freshly collected rows, as counts only
    (``as_json``: the first-score record of :func:`sample_score`, always whole). ``dev_only``
    (``--dev-only`` or ``--misses``): only the rows that fell on the dev split of the rebuilt corpus
    are explained, so a sample re-scored while working on rules never shows a held-out count."""
    if as_json:
        print(json.dumps(sample_score(paths, flags), indent=2))
        return 0
    errors, benign = load_sample(paths)
    what = ""
    if dev_only:
        where = split_of_sample()
        errors, benign = [r for r in errors if where(r) == "dev"], [r for r in benign if where(r) == "dev"]
        what, by_split = " on the dev split (--dev-only)", False
    scanner = Scanner()
    print(f"sample: {len(errors)} error rows, {len(benign)} benign rows from {len(paths)} file(s){what}")
    for mode in ("text", "log"):
        hit = Counter()
        silent = 0
        for r in errors:
            cat, _sid, _conf = top1(scanner, r["excerpt"], mode == "log")
            hit[r["expected_category"]] += cat == r["expected_category"]
            silent += cat is None
        flagged = sum(bool(alarms(scanner, r["excerpt"], mode == "log")) for r in benign)
        per = Counter(r["expected_category"] for r in errors)
        print(f"{mode:<5} top-1 {pct(sum(hit.values()), len(errors))}, silent {silent}, "
              f"benign alarms {flagged}/{len(benign)}")
        print("      by category: " + ", ".join(f"{c} {hit[c]}/{n}" for c, n in sorted(per.items())))
        if projects:
            print_by_project(f"{mode} by project", by_project(scanner, errors, mode == "log"))
        if by_split:
            print_by_split(scanner, errors, benign, mode == "log")
    return 0


def print_by_split(scanner: Scanner, errors: list[dict], benign: list[dict], log_mode: bool) -> None:
    """Top-1 and benign alarms of sample rows per split of the rebuilt corpus (counts only: the
    split of each row is looked up by row id in errors.jsonl / benign.jsonl, so run
    ``python -m fixtures.errors.build_corpus`` first; a row the build dropped as a verbatim
    duplicate of an existing excerpt is counted as ``dropped``)."""
    where = split_of_sample()
    hit: Counter = Counter()
    n: Counter = Counter()
    silent: Counter = Counter()
    for r in errors:
        s = where(r)
        cat, _sid, _conf = top1(scanner, r["excerpt"], log_mode)
        n[s] += 1
        hit[s] += cat == r["expected_category"]
        silent[s] += cat is None
    bn: Counter = Counter()
    bf: Counter = Counter()
    for r in benign:
        s = where(r)
        bn[s] += 1
        bf[s] += bool(alarms(scanner, r["excerpt"], log_mode))
    print("      by split: " + ", ".join(
        f"{s} top-1 {pct(hit[s], n[s])} silent {silent[s]}" for s in ("dev", "heldout", "dropped") if n[s])
        + "; benign alarms " + ", ".join(f"{s} {bf[s]}/{bn[s]}" for s in ("dev", "heldout", "dropped") if bn[s]))


def score_framings(log_check: bool = False, splits: tuple[str, ...] = ("dev", "heldout")) -> int:
    """Per framing (fixtures/errors/framings.py): of the rows answered right unframed, how many keep
    their answer framed, and the benign lines flagged framed; held-out as counts only."""
    from fixtures.errors.framings import FRAMES, WRAPS

    errors = [r for r in load("errors.jsonl") if r["split"] in splits]
    benign = [r for r in load("benign.jsonl") if r["split"] in splits]
    scanner = Scanner()
    right = {s: [r for r in errors if r["split"] == s and top1(scanner, r["excerpt"], False)[0] == r["expected_category"]]
             for s in splits}
    label = {"dev": "dev", "heldout": "held-out"}
    print("answered right unframed: " + ", ".join(f"{label[s]} {len(right[s])}" for s in splits))
    print(f"{'framing':<16} " + " ".join(f"{label[s] + ' kept':>14}" for s in splits) + " "
          + " ".join(f"{label[s] + ' benign alarms':>22}" for s in splits) + (f" {'log != text':>12}" if log_check else ""))
    for name, f in {**FRAMES, **WRAPS}.items():
        kept = {s: sum(top1(scanner, f(r["excerpt"]), False)[0] == r["expected_category"] for r in rows)
                for s, rows in right.items()}
        ben = {s: sum(bool(alarms(scanner, f(r["excerpt"]), False)) for r in benign if r["split"] == s) for s in splits}
        nben = {s: sum(r["split"] == s for r in benign) for s in splits}
        line = (f"{name:<16} " + " ".join(f"{kept[s]:>8}/{len(right[s]):<5}" for s in splits) + " "
                + " ".join(f"{ben[s]:>16}/{nben[s]:<5}" for s in splits))
        if log_check:
            diff = sum(top1(scanner, f(r["excerpt"]), False) != top1(scanner, f(r["excerpt"]), True)
                       for r in errors + benign)
            line += f" {diff:>12}"
        print(line)
    return 0


def term_support(model, rows: list[dict]) -> dict[tuple[str, str], set[str]]:
    """(category, term) -> the threads of ``rows`` whose excerpt (log prefixes and source paths
    removed, lower-cased) holds the term: which development threads a term could have been
    written from."""
    from k3doctor.explain.fallback import _drop_source_paths, strip_log_prefix

    texts = [(r["thread"], "\n".join(_drop_source_paths(strip_log_prefix(ln))
                                      for ln in r["excerpt"].splitlines()).lower()) for r in rows]
    out: dict[tuple[str, str], set[str]] = {}
    for cat in model.categories:
        for t in cat.terms:
            out[(cat.name, t.text)] = {th for th, low in texts if t.occurs_in(low)}
    return out


def _fallback_cv_figure(model, errors: list[dict], support) -> tuple[int | None, int]:
    """Right answers of the fallback alone when neither vote has seen the row: 5 folds by thread,
    the learned model retrained without the fold (dev rows of the other folds + the sweeps), the
    terms leave-thread-out as above. (None, 0) when no learned model is shipped."""
    import dataclasses

    if model.learned_model() is None:
        return None, 0
    from k3doctor.explain.learned import parse_learned
    from tools import fallback_model as fm

    examples = fm.extract(errors, model)
    sweeps = tuple(fm.sweep_examples(model))
    cats = [c.name for c in model.categories]
    right = silent = 0
    for fold in range(fm.FOLDS):
        train = [e for e in examples if fm.fold_of(e.thread) != fold]
        learned = parse_learned(fm.model_json(train, sweeps, cats), "a fold's model")
        base = dataclasses.replace(model, learned=learned)
        for r in errors:
            if fm.fold_of(r["thread"]) != fold:
                continue
            own = {k for k, v in support.items() if v == {r["thread"]}}
            cats_ = tuple(dataclasses.replace(c, terms=tuple(t for t in c.terms if (c.name, t.text) not in own))
                          for c in base.categories)
            got = top1(Scanner(signatures=[], fallback=dataclasses.replace(base, categories=cats_)),
                       r["excerpt"], False)[0]
            right += got == r["expected_category"]
            silent += got is None
    return right, silent


def score_fallback_only(show: bool = False, category: str | None = None) -> int:
    """The fallback alone (no signature, benign ones included) on the dev errors: what answers an
    error nobody wrote a signature for. Two figures: with the shipped terms, and leave-thread-out
    (for each row, the category terms that occur in no other dev thread are removed: the terms
    that would not exist had this thread not been read). Dev rows only; nothing held out is read."""
    import dataclasses

    from k3doctor.explain.fallback import load_fallback

    model = load_fallback()
    errors = [r for r in load("errors.jsonl") if r["split"] == "dev"]
    benign = [r for r in load("benign.jsonl") if r["split"] == "dev"]
    support = term_support(model, errors)
    alone = Scanner(signatures=[], fallback=model)
    hit, loo, silent, loo_silent = Counter(), Counter(), 0, 0
    per = Counter(r["expected_category"] for r in errors)
    misses = []
    for r in errors:
        want = r["expected_category"]
        cat, _sid, _ = top1(alone, r["excerpt"], False)
        hit[want] += cat == want
        silent += cat is None
        if cat != want:
            misses.append((r, cat))
        own = {k for k, v in support.items() if v == {r["thread"]}}
        scanner = alone
        if own:
            cats = tuple(dataclasses.replace(c, terms=tuple(t for t in c.terms if (c.name, t.text) not in own))
                         for c in model.categories)
            scanner = Scanner(signatures=[], fallback=dataclasses.replace(model, categories=cats))
        lcat = top1(scanner, r["excerpt"], False)[0] if own else cat
        loo[want] += lcat == want
        loo_silent += lcat is None
    flagged = sum(bool(alarms(alone, r["excerpt"], False)) for r in benign)
    n = len(errors)
    cv, cv_silent = _fallback_cv_figure(model, errors, support)
    print(f"fallback alone, dev errors (text mode): {pct(sum(hit.values()), n)}, silent {silent}")
    print(f"  leave-thread-out terms:               {pct(sum(loo.values()), n)}, silent {loo_silent}"
          + ("  (the learned model in-sample)" if model.learned_model() is not None else ""))
    if cv is not None:
        print(f"  5-fold by thread, model retrained:    {pct(cv, n)}, silent {cv_silent}"
              "  (terms leave-thread-out too)")
    print("  by category: " + ", ".join(f"{c} {hit[c]}/{k} (loo {loo[c]})" for c, k in sorted(per.items())))
    print(f"  dev benign lines flagged by the fallback alone (no benign signature): {flagged}/{len(benign)}")
    if show:
        print(f"\nfallback-alone dev misses: {len(misses)}")
        for r, got in misses:
            if category and category not in (r["expected_category"], got):
                continue
            print(f"- {r['id']} want {r['expected_category']}, got {got}\n    {r['excerpt'][:300]!r}")
    return 0


def score_ordering(show: bool = False, splits: tuple[str, ...] = ("dev", "heldout")) -> int:
    """Root cause first. (1) Corpus rows whose expected category is among the matches but not the
    first one. (2) The consequence probe: each row answered right on its own is pasted with a
    consequence line (fixtures/errors/framings.py CONSEQUENCES: a watchdog timeout, a peer's
    connection reset, an exit code, an engine wrapper ...) after it and before it; how many keep
    their category first. Dev rows listed with --misses; held-out as counts only."""
    from fixtures.errors.framings import CONSEQUENCES

    errors = load("errors.jsonl")
    scanner = Scanner()
    for mode in ("text", "log"):
        for split in splits:
            rows = [r for r in errors if r["split"] == split]
            later = []
            for r in rows:
                rep = scanner.explain_bytes(r["excerpt"].encode("utf-8", "surrogateescape"), prefilter=mode == "log")
                cats = [m.sig.category for m in rep.matches if not m.benign]
                if cats and cats[0] != r["expected_category"] and r["expected_category"] in cats:
                    later.append((r, rep))
            print(f"{mode:<5} {split:<8} right category matched but not first: {len(later)}/{len(rows)}")
            if show and split == "dev" and mode == "text":
                for r, rep in later:
                    print(f"- {r['id']} want {r['expected_category']}: "
                          + ", ".join(f"{m.sig.id}[{m.sig.category}/{m.sig.tier}]@{m.first_line}" for m in rep.matches))
                    print("    " + repr(r["excerpt"][:600]))
    print("\nconsequence probe (text mode): rows answered right alone that keep their category first")
    for split in splits:
        right = [r for r in errors if r["split"] == split
                 and top1(scanner, r["excerpt"], False)[0] == r["expected_category"]]
        total, lost = 0, []
        per = []
        for name, line in CONSEQUENCES.items():
            kept = {"after": 0, "before": 0}
            for r in right:
                for where in kept:
                    text = r["excerpt"] + "\n" + line if where == "after" else line + "\n" + r["excerpt"]
                    cat, sid, _ = top1(scanner, text, False)
                    ok = cat == r["expected_category"]
                    kept[where] += ok
                    if not ok and split == "dev":
                        lost.append((name, where, r["id"], sid))
            total += kept["after"] + kept["before"]
            per.append(f"{name} {kept['after']}/{kept['before']}")
        n = 2 * len(CONSEQUENCES) * len(right)
        print(f"  {split:<8} {pct(total, n)} (after/before: {', '.join(per)} of {len(right)})")
        if show and split == "dev":
            for name, where, rid, sid in lost:
                print(f"  - {rid} with {name} {where}: first {sid}")
    return 0


def score_sweeps(as_json: bool = False) -> int:
    """Per source sweep (fixtures/errors/sweeps/): the share ``explain`` gave its messages' category
    before the sweep's rules (the header's ``before``), the share now and the gate; and the totals.
    Sweep messages are public source text, not corpus rows: nothing here is held out."""
    from fixtures.errors.sweep_files import load_sweep, sweep_files, sweep_hit

    scanner = Scanner()
    table = []
    for path in sweep_files():
        try:
            head, rows = load_sweep(path)
        except ValueError as exc:
            raise SystemExit(f"validate_explain: {exc}") from None
        now = sum(sweep_hit(scanner, str(r.get("message", "")), str(r.get("category"))) for r in rows)
        table.append({"sweep": head["sweep"], "source": head.get("commit"), "rows": len(rows),
                      "before": head.get("before", [0, 0])[0], "now": now, "gate": head.get("gate")})
    total = {k: sum(t[k] for t in table) for k in ("rows", "before", "now")}
    if as_json:
        print(json.dumps({"sweeps": table, "total": total}, indent=2))
        return 0
    print(f"{'sweep':<18} {'before':>16} {'now':>16} {'gate':>5}  source")
    for t in table:
        print(f"{t['sweep']:<18} {pct(t['before'], t['rows']):>16} {pct(t['now'], t['rows']):>16} "
              f"{t['gate']:>5}  {str(t['source'])[:48]}")
    print(f"{'total':<18} {pct(total['before'], total['rows']):>16} {pct(total['now'], total['rows']):>16}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--misses", action="store_true",
                    help="print dev-split misses and alarms (implies --dev-only)")
    ap.add_argument("--dev-only", action="store_true",
                    help="score and print the dev split only (also with --framings and --ordering): the "
                         "held-out rows are not even explained, so working on rules between measurements "
                         "never shows a held-out count")
    ap.add_argument("--category", help="with --misses: only rows expecting, or misread as, this category")
    ap.add_argument("--baseline-ref", metavar="GIT_REF",
                    help="also score the KB as it was at this git ref (signatures only), e.g. the "
                         "commit before the KB was rebuilt")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--sample", nargs="+", metavar="JSONL",
                    help="score only these collected files (rows as collected, before the corpus is "
                         "rebuilt): counts per category, no row text, so a fresh sample can be "
                         "scored before anyone looks at its misses")
    ap.add_argument("--by-project", action="store_true",
                    help="also print top-1 per source project (counts only, signatures + fallback)")
    ap.add_argument("--by-split", action="store_true",
                    help="with --sample: top-1 and benign alarms per split of the rebuilt corpus (counts only)")
    ap.add_argument("--framings", action="store_true",
                    help="answers kept under each framing/wrap of fixtures/errors/framings.py (counts)")
    ap.add_argument("--log-check", action="store_true", help="with --framings: also count rows whose "
                    "log-mode answer differs from the text-mode one")
    ap.add_argument("--ordering", action="store_true",
                    help="rows whose right category is matched but not first (with --misses: the dev rows)")
    ap.add_argument("--fallback-only", action="store_true",
                    help="the fallback alone (signatures removed) on the dev errors, with shipped and "
                         "leave-thread-out terms (with --misses: its dev misses); dev rows only")
    ap.add_argument("--sweeps", action="store_true",
                    help="the source sweeps (fixtures/errors/sweeps/): each file's share before its rules, now, "
                         "and its gate, with the totals")
    ap.add_argument("--fallback-cv", action="store_true",
                    help="a corpus-learned category model against the fallback terms: 5-fold "
                         "cross-validation by thread on the dev errors (tools/fallback_model.py --cv)")
    args = ap.parse_args(argv)
    if args.sweeps:
        return score_sweeps(args.json)
    if args.fallback_cv:
        from tools.fallback_model import main as fallback_model

        return fallback_model(["--cv"])
    if args.fallback_only:
        return score_fallback_only(args.misses, args.category)
    # --dev-only (and --misses, which works on rules): the held-out rows are not even explained
    splits: tuple[str, ...] = ("dev",) if args.dev_only or args.misses else ("dev", "heldout")
    if args.framings:
        return score_framings(args.log_check, splits)
    if args.ordering:
        return score_ordering(args.misses, splits)
    if args.sample:
        return score_sample([Path(p) for p in args.sample], projects=args.by_project, by_split=args.by_split,
                            as_json=args.json, flags=list(sys.argv[1:] if argv is None else argv),
                            dev_only=splits == ("dev",))
    errors = [r for r in load("errors.jsonl") if r["split"] in splits]
    benign = [r for r in load("benign.jsonl") if r["split"] in splits]
    results: dict = {}
    t0 = time.perf_counter()
    scanners = [("signatures only (baseline)", Scanner(fallback=False)), ("signatures + fallback", Scanner())]
    if args.baseline_ref:
        scanners.insert(0, (f"KB at {args.baseline_ref[:10]}", Scanner(kb_at(args.baseline_ref), fallback=False)))
    for label, scanner in scanners:
        for mode in ("text", "log"):
            results[(label, mode)] = evaluate(scanner, errors, benign, mode == "log")
    elapsed = time.perf_counter() - t0
    if args.json:
        doc = [{"scanner": k[0], "mode": k[1], **{s: {x: y for x, y in v.items() if x not in ("misses", "alarms")}
                                                     for s, v in r.items() if s in splits}}
               for k, r in results.items()]
        print(json.dumps(doc, indent=2))
        return 0
    cats = Counter((r["split"], r["expected_category"]) for r in errors)
    print(f"corpus: {len(errors)} errors from {len({r['thread'] for r in errors})} threads "
          f"(dev {sum(r['split'] == 'dev' for r in errors)}, held-out "
          f"{sum(r['split'] == 'heldout' for r in errors)}); {len(benign)} benign lines"
          + (" (--dev-only: the held-out rows are not scored)" if len(splits) == 1 else ""))
    if "heldout" in splits:
        print("held-out by category: " + ", ".join(f"{c} {n}" for (s, c), n in sorted(cats.items()) if s == "heldout"))
    print()
    print(f"{'scanner':<28} {'mode':<5} {'split':<8} {'top-1':>16} {'silent':>7} {'fallback':>8} {'benign alarms':>14}")
    for (label, mode), res in results.items():
        for split in splits:
            r = res[split]
            print(f"{label:<28} {mode:<5} {split:<8} {pct(r['top1'], r['rows']):>16} {r['silent']:>7} "
                  f"{r['fallback']:>8} {pct(r['benign_alarms'], r['benign_rows']):>14}")
    base = results[("signatures only (baseline)", "text")]["heldout"]
    full = results[("signatures + fallback", "text")]["heldout"]
    if base["top1"] and "heldout" in splits:
        print(f"\nheld-out top-1, text mode: {full['top1'] / base['top1']:.2f}x the signatures-only baseline")
    print(f"({elapsed:.1f} s for {2 * len(scanners) * (len(errors) + len(benign))} explains)")
    if args.by_project:
        full_scanner = scanners[-1][1]
        print("\ntop-1 by project, signatures + fallback (counts only):")
        for split in splits:
            rows = [r for r in errors if r["split"] == split]
            for mode in ("text", "log"):
                print_by_project(f"{split} {mode}", by_project(full_scanner, rows, mode == "log"))
    if args.misses:
        dev = results[("signatures + fallback", "text")]["dev"]
        print(f"\ndev misses (text mode): {len(dev['misses'])}")
        for rid, want, got, sid, src, ex in dev["misses"]:
            if args.category and args.category not in (want, got):
                continue
            print(f"- {rid} want {want}, got {got} ({sid})  {src}\n    {ex[:300]!r}")
        print(f"\ndev benign alarms (text mode): {len(dev['alarms'])}")
        for rid, ids, ex in dev["alarms"]:
            print(f"- {rid} {ids}  {ex[:200]!r}")
        logdev = results[("signatures + fallback", "log")]["dev"]
        extra = {m[0] for m in logdev["misses"]} - {m[0] for m in dev["misses"]}
        if extra:
            print(f"\ndev misses only in log mode: {sorted(extra)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
