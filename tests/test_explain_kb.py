"""The explain knowledge base: shape, coverage, examples, Xid table, registry cross-check."""

from __future__ import annotations

import re

import pytest

from fixtures.errors.sweep_files import sweep_messages
from k3doctor.explain.kb import CATEGORIES, KBError, load_kb, parse_kb_text
from k3doctor.explain.kb import tomllib as toml_lib
from k3doctor.explain.scan import Scanner
from k3doctor.explain.prefilter import fold

KB = load_kb()
BY_ID = {s.id: s for s in KB}
SCANNER = Scanner()


def test_at_least_60_signatures_in_every_category():
    assert len(KB) >= 60
    cats = {s.category for s in KB}
    assert cats == set(CATEGORIES)


def test_every_signature_is_complete():
    for s in KB:
        assert s.title and s.cause and s.fix, s.id
        assert s.patterns and s.keywords, s.id
        assert s.examples, f"{s.id} has no example line"
        assert all(u.startswith("https://") for u in s.references), s.id
        assert s.references, s.id
        if not s.benign:
            # a fix must be concrete: an env var, a flag, a command or a check
            assert re.search(r"[A-Z][A-Z0-9_]{3,}=|--[a-z]|`|k3doctor|nvidia-smi|pip ", s.fix), s.id


#: an error line with no category word, appended to an example that is only soft lines
_ERROR_LINE = "RuntimeError: worker exited with code 1"


@pytest.mark.parametrize("sig", KB, ids=lambda s: s.id)
def test_examples_are_recognised_by_their_signature(sig):
    model = SCANNER.fallback
    assert model is not None
    for ex in sig.examples:
        # an example printed at INFO or as a notice ("... as fallback") is an answer only when the
        # text also holds an error line (or the signature is standalone); then it must be found
        soft = not sig.benign and not sig.standalone and all(
            model.is_soft_line(ln) for ln in ex.splitlines() if ln.strip())
        text = f"{ex}\n{_ERROR_LINE}" if soft else ex
        for prefilter in (False, True):
            report = SCANNER.explain_bytes(text.encode(), prefilter=prefilter)
            ids = [m.sig.id for m in report.matches]
            assert sig.id in ids, (prefilter, text, ids)
            if soft:
                alone = SCANNER.explain_bytes(ex.encode(), prefilter=prefilter)
                assert all(m.benign for m in alone.matches), (ex, [m.sig.id for m in alone.matches])
            if prefilter:
                # stage-1 coverage: the example line contains a prefilter anchor
                folded = fold(ex.encode())  # anchors are searched in case- and digit-folded text
                assert any(fold(a.encode()) in folded for a in SCANNER.prefilter.anchors or ()), ex


def test_keywords_occur_in_examples():
    for s in KB:
        for ex in s.examples:
            assert any(k in ex for k in s.keywords), (s.id, ex)


REQUIRED_XIDS = [13, 31, 43, 45, 48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120] + list(range(137, 151))


@pytest.mark.parametrize("xid", REQUIRED_XIDS)
def test_xid_table(xid):
    for line in (f"[ 99.1] NVRM: Xid (PCI:0000:a1:00): {xid}, pid=77, name=python, detail",
                 f"XID {xid} reported on GPU 3"):
        report = SCANNER.explain_bytes(line.encode(), prefilter=True)
        xids = [m for m in report.matches if m.sig.id.startswith("xid-")]
        assert len(xids) == 1, (line, [m.sig.id for m in report.matches])
        m = xids[0]
        assert m.sig.category == "gpu-health"
        assert str(xid) in m.sig.title or "137-143" in m.sig.title
        assert m.sig.fix


def test_xid_number_is_not_confused_with_pci_address():
    line = "NVRM: Xid (PCI:0000:79:00): 13, pid=1, name=x, Graphics Exception"
    ids = [m.sig.id for m in SCANNER.explain_bytes(line.encode()).matches]
    assert ids == ["xid-13"]
    assert "0000:79:00" in SCANNER.explain_bytes(line.encode()).matches[0].cause


def test_seed_failures_are_covered():
    seed = {
        "ValueError: K3 latent-MoE tail fusion requires SM100.": "k3-tail-fusion-requires-sm100",
        "RuntimeError: cp_world_size must be positive, required by downstream unified code path. Use 1 if CP is not enabled.": "k3-cp-world-size",
        "FileNotFoundError: [Errno 2] No such file or directory: '/shared/home/u/.triton/cache/99/k.cubin.tmp.pid_8_1a2b'": "triton-cache-tmp-race",
        "[rank12]:[E1130 09:00:00.1 ProcessGroupGloo.cpp:144] Gloo connectFullMesh failed with [pair.cc:144] no error": "gloo-connectfullmesh",
        "ValueError: The model's max seq len (65536) is larger than the maximum number of tokens that can be stored in KV cache (22016).": "vllm-kv-too-small-for-max-len",
        "safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer": "safetensors-incomplete",
    }
    for text, sid in seed.items():
        top = SCANNER.explain_bytes(text.encode()).matches[0]
        assert top.sig.id == sid, (text, top.sig.id)


def test_fastsafetensors_context_upgrades_the_oom():
    plain = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 15.50 GiB. GPU 1 has a total capacity of 139.8 GiB of which 3.1 GiB is free."
    assert SCANNER.explain_bytes(plain.encode()).matches[0].sig.id == "torch-cuda-oom"
    with_ctx = "  File \"/x/fastsafetensors/copier/gds.py\", line 9, in submit_io\n" + plain
    top = SCANNER.explain_bytes(with_ctx.encode()).matches
    assert [m.sig.id for m in top] == ["fastsafetensors-load-oom"]  # supersedes the generic OOM
    assert "Tried to allocate 15.50 GiB with 3.1 GiB free." in top[0].cause


def test_extractors_fill_the_cause():
    cases = {
        "RuntimeError: [enforce fail at device.cc:84] ifa != nullptr. Unable to find address for: bond0": "bond0",
        "FileNotFoundError: [Errno 2] No such file or directory: '/nfs/u/.triton/cache/ab/k.json.tmp.pid_1_2'": "/nfs/u/.triton/cache",
        "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.": "0000:3b:00",
        "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge (model-00007-of-000096.safetensors)": "model-00007-of-000096.safetensors",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.1 GiB of which 5.00 MiB is free.": "20.00 MiB with 5.00 MiB free",
    }
    for text, needle in cases.items():
        top = SCANNER.explain_bytes(text.encode()).matches[0]
        assert needle in top.cause, (top.sig.id, top.cause)


def test_malformed_kb_is_rejected():
    good = """
[[signature]]
id = "x-y"
title = "t"
keywords = ["k"]
patterns = ['k']
cause = "c"
fix = "f"
"""
    assert parse_kb_text(good, "other")[0].id == "x-y"
    with pytest.raises(KBError, match="missing"):
        parse_kb_text(good.replace('fix = "f"', ""), "other")
    with pytest.raises(KBError, match="kebab"):
        parse_kb_text(good.replace('"x-y"', '"X_Y"'), "other")
    with pytest.raises(KBError, match="malformed check code"):
        parse_kb_text(good + 'related_checks = ["net1"]\n', "other")
    with pytest.raises(KBError, match="tier"):
        parse_kb_text(good + 'tier = "bad"\n', "other")
    with pytest.raises(KBError, match="unknown key"):
        parse_kb_text(good + 'pattern = "typo"\n', "other")
    with pytest.raises(KBError, match="category"):
        parse_kb_text('category = "network"\n' + good, "other")


def test_related_checks_exist_in_the_registry():
    registry = pytest.importorskip("k3doctor.registry", reason="team check registry not importable")
    codes = set(registry.load_checks())
    missing = sorted({c for s in KB for c in s.related_checks} - codes)
    assert not missing, f"KB references check codes the registry lacks: {missing}"


def test_detail_templates_first_fully_known_wins():
    s = BY_ID["vllm-kv-too-small-for-max-len"]
    assert s.render_cause({"max_len": "65536", "kv_tokens": "22016"}).endswith(
        "Requested 65536 tokens, the KV cache holds 22016.")
    full = {"max_len2": "65536", "need_gib": "1.72", "have_gib": "0.61", "est_len": "21888"}
    assert s.render_cause(full).endswith("0.61 GiB is available; the engine's largest context is 21888.")
    no_est = {k: v for k, v in full.items() if k != "est_len"}
    assert s.render_cause(no_est).endswith("0.61 GiB is available.")
    assert s.render_cause({}) == s.cause
    one = parse_kb_text('[[signature]]\nid = "x-one"\ntitle = "t"\nkeywords = ["k"]\npatterns = ["k(?P<n>\\\\d)"]\n'
                        'cause = "c."\nfix = "f"\ntier = "cause"\nexamples = ["k1"]\n'
                        'references = ["https://example.org"]\ndetail = "n={n}."\n', "memory")
    assert one[0].render_cause({"n": "1"}) == "c. n=1."
    with pytest.raises(KBError):
        parse_kb_text('[[signature]]\nid = "x-bad"\ntitle = "t"\nkeywords = ["k"]\npatterns = ["k"]\n'
                      'cause = "c"\nfix = "f"\ntier = "cause"\nexamples = ["k"]\n'
                      'references = ["https://example.org"]\ndetail = 3\n', "memory")


# -- every signature is grounded in the corpus ------------------------------------------------
def _corpus_lines() -> set[str]:
    import json
    from pathlib import Path

    base = Path(__file__).resolve().parents[1] / "fixtures" / "errors"
    lines: set[str] = set()
    for name in ("errors.jsonl", "benign.jsonl"):
        for raw in (base / name).read_text(encoding="utf-8").splitlines():
            if not raw.strip():
                continue
            row = json.loads(raw)
            if row["split"] != "dev":
                continue
            lines.update(ln.strip() for ln in row["excerpt"].splitlines() if ln.strip())
    return lines


DEV_LINES = _corpus_lines()


#: messages of the source sweeps (fixtures/errors/sweeps/): public source text, not held out, so a
#: signature may quote one whole as its positive example (its near miss still comes from the corpus)
SWEEP_MESSAGES = sweep_messages()


def _from_corpus(text: str) -> bool:
    return all(ln.strip() in DEV_LINES for ln in text.splitlines() if ln.strip())


#: Signatures of the seed deployment's own failures (the brief; shared/reference/kimi-k3.md quotes
#: the vLLM source strings). No public thread pastes these lines yet, so their positive example
#: is the engine's message itself; they still need a corpus near miss like every signature.
SEED_ONLY = {
    "k3-tail-fusion-requires-sm100": "vLLM nvidia/ops/latent_moe_tail.py (seed: vLLM variant on H200)",
    "k3-cp-world-size": "vLLM 0.27.1 kimi-k3 MLA on Hopper (seed: PP on H200)",
    "megamoe-requires-ep": "vLLM kimi_k3 nvidia/model.py",
    "flashkda-requirements": "vLLM kimi_k3 nvidia/kda.py",
    "fastsafetensors-load-oom": "seed: fastsafetensors stages a whole 16 GB shard per rank",
}
#: Xid rows of NVIDIA's catalog for which no public thread quotes a real line (searched for each);
#: their example follows the driver's "NVRM: Xid (PCI:...): N, ..." format and the catalog text.
CATALOG_ONLY = {f"xid-{n}" for n in (45, 61, 63, 74, 92, 95, 145, 146, 147, 148, 150)}
#: cudaErrorNvlinkUncorrectable's text from the CUDA runtime API docs; the one public thread that
#: quotes it is a held-out thread, so no dev line may be used.
CATALOG_ONLY.add("nvlink-uncorrectable")


@pytest.mark.parametrize("sig", KB, ids=lambda s: s.id)
def test_signature_has_a_corpus_positive_and_a_corpus_near_miss(sig):
    """At least one example is quoted from the dev corpus (or is a source sweep's message) and one near
    miss from the dev corpus; the near misses contain none of this signature's matches."""
    if sig.id not in SEED_ONLY and sig.id not in CATALOG_ONLY:
        assert any(_from_corpus(ex) or ex.strip() in SWEEP_MESSAGES for ex in sig.examples), (
            f"{sig.id}: no example quoted from the dev corpus or a source sweep")
    assert sig.near_misses, f"{sig.id}: no near_misses"
    assert any(_from_corpus(nm) for nm in sig.near_misses), f"{sig.id}: no near miss quoted from the dev corpus"
    for nm in sig.near_misses:
        for prefilter in (False, True):
            ids = [m.sig.id for m in SCANNER.explain_bytes(nm.encode(), prefilter=prefilter).matches]
            assert sig.id not in ids, (sig.id, nm)


def test_the_kb_is_not_written_from_heldout_threads():
    """No signature quotes a line found only in held-out rows, or cites a held-out thread (the
    held-out split stays unseen; tools/kb_heldout_guard.py --fix removes offenders). A source
    sweep's message is public source text, not a held-out line, even where a held-out excerpt
    repeats it word for word (round 284: vllm-uva-unavailable's sweep example)."""
    from tools.kb_heldout_guard import heldout_only

    from fixtures.errors.build_corpus import thread_key

    held_lines, held_threads = heldout_only()
    bad = []
    for s in KB:
        for text in s.examples + s.near_misses:
            bad += [(s.id, "quotes a held-out line") for ln in text.splitlines() if ln.strip() in held_lines]
        for url in s.references:
            try:
                if thread_key(url) in held_threads:
                    bad.append((s.id, f"cites held-out thread {thread_key(url)}"))
            except ValueError:
                pass
    assert not bad, sorted(set(bad))


def test_the_guard_names_a_held_out_line_inside_a_multi_line_example():
    """tools/kb_heldout_guard.py reads each line of a multi-line example, as the test above does
    (it used to compare whole list items only, so such a line passed the guard and failed here)."""
    from tools.kb_heldout_guard import inside_items

    sig, k, text = next((s, k, t) for s in KB for k, t in enumerate(s.examples) if len(t.splitlines()) > 2)
    line = text.splitlines()[1].strip()
    assert f"{sig.id}: examples[{k}]" in inside_items({line})
    assert inside_items(set()) == []


def _guard_on(tmp_path, monkeypatch, toml: str, held: set[str]):
    import tools.kb_heldout_guard as guard

    (tmp_path / "other.toml").write_text(toml, encoding="utf-8")
    monkeypatch.setattr(guard, "KB", tmp_path)
    monkeypatch.setattr(guard, "heldout_only", lambda: (held, set()))
    monkeypatch.setattr(guard, "inside_items", lambda lines: [])
    return guard


_GUARD_TOML = """[[signature]]
id = "x"
patterns = [
  'RuntimeError: UVA is not available',
]
examples = ["RuntimeError: UVA is not available", "RuntimeError: UVA is not available here"]
near_misses = [
  "RuntimeError: UVA is not available",
  "RuntimeError: NIXL is not available",
]
"""


def test_the_guard_never_removes_a_pattern_line_and_reads_inline_lists(tmp_path, monkeypatch, capsys):
    """Round 284: ``--fix`` used to drop any quoted line equal to a held-out line, so a pattern line
    went and the KB broke, while the inline example list it should have named was never read. Now
    only ``examples`` / ``near_misses`` items are read, block or inline, and patterns stay."""
    guard = _guard_on(tmp_path, monkeypatch, _GUARD_TOML, {"RuntimeError: UVA is not available"})
    assert guard.main([]) == 0
    out = capsys.readouterr().out
    assert out.count("quotes a held-out line") == 2 and "2 item(s) found" in out
    assert (tmp_path / "other.toml").read_text(encoding="utf-8") == _GUARD_TOML  # report only
    guard.main(["--fix"])
    fixed = (tmp_path / "other.toml").read_text(encoding="utf-8")
    assert "  'RuntimeError: UVA is not available',\n" in fixed  # the pattern line stays
    assert 'examples = ["RuntimeError: UVA is not available here"]' in fixed
    assert '"RuntimeError: NIXL is not available"' in fixed and fixed.count("NIXL") == 1
    toml_lib.loads(fixed)  # still a valid TOML file


def test_the_guard_leaves_an_inline_list_it_would_empty_for_a_hand_fix(tmp_path, monkeypatch, capsys):
    toml = _GUARD_TOML.replace(', "RuntimeError: UVA is not available here"', "")
    guard = _guard_on(tmp_path, monkeypatch, toml, {"RuntimeError: UVA is not available"})
    guard.main(["--fix"])
    assert "would be empty: replace by hand" in capsys.readouterr().out
    assert 'examples = ["RuntimeError: UVA is not available"]' in (tmp_path / "other.toml").read_text()


def test_the_guard_reads_several_items_on_one_line_and_keeps_the_others(tmp_path, monkeypatch, capsys):
    """Round 280's merge brought a list line holding two items; the guard read it as one string and
    crashed. Each item is read; ``--fix`` keeps the line's other items (a ``#`` inside one stays)."""
    toml = _GUARD_TOML.replace('  "RuntimeError: NIXL is not available",\n',
                               '  "see sglang#12 first", "RuntimeError: UVA is not available",\n')
    guard = _guard_on(tmp_path, monkeypatch, toml, {"RuntimeError: UVA is not available"})
    guard.main(["--fix"])
    assert "3 item(s) removed" in capsys.readouterr().out
    fixed = (tmp_path / "other.toml").read_text(encoding="utf-8")
    assert '  "see sglang#12 first",\n' in fixed
    toml_lib.loads(fixed)


def test_the_guard_names_a_broken_kb_file_instead_of_a_traceback(monkeypatch, capsys):
    import tools.kb_heldout_guard as guard

    def broken(lines):
        raise KBError("kb/other.toml: Expected ']]' at the end of an array declaration (at line 3, column 12)")

    monkeypatch.setattr(guard, "inside_items", broken)
    assert guard.main([]) == 2
    err = capsys.readouterr().err
    assert "kb/other.toml" in err and "fix that file" in err


def test_a_sweep_message_is_not_a_held_out_only_line():
    """A held-out excerpt that repeats a source sweep's message word for word does not make the
    message a held-out line (the sweep is public source text the KB may quote)."""
    from tools.kb_heldout_guard import heldout_only

    from fixtures.errors.sweep_files import sweep_messages

    held, _ = heldout_only()
    n = len(held & sweep_messages())  # a count: a failure must not print held-out text
    assert n == 0, f"{n} sweep messages counted as held-out-only lines"
    assert "RuntimeError: UVA is not available" in sweep_messages()


def test_no_fallback_term_is_listed_twice_in_a_category():
    """Each occurrence of a term adds its weight, so a term written twice (two rounds or sweeps adding
    the same word) would weigh their sum without saying so: the parser refuses it, naming the term."""
    from importlib import resources

    from k3doctor.explain.fallback import load_fallback, parse_fallback_text

    for cat in load_fallback().categories:
        texts = [t.text for t in cat.terms]
        assert len(texts) == len(set(texts)), cat.name
    text = resources.files("k3doctor.explain").joinpath("kb/fallback.toml").read_text(encoding="utf-8")
    doubled = text.replace('["undefined symbol", 6],', '["undefined symbol", 6], ["undefined symbol", 1],', 1)
    assert doubled != text
    with pytest.raises(KBError, match=r"\[version\]: term 'undefined symbol' is listed twice"):
        parse_fallback_text(doubled)


# -- kb/kb-parsed.json: the TOML parsed ahead of time -------------------------------------------

def _kb_texts() -> dict[str, str]:
    from k3doctor.explain.kb import toml_texts

    return toml_texts()


def test_the_shipped_parsed_kb_is_built_from_the_toml_as_it_is():
    """A stale file only slows loading down, but the package must ship it fresh: after a KB edit,
    run ``python tools/kb_parsed.py``."""
    from tools.kb_parsed import render
    from k3doctor.explain.kb import PARSED_FILE
    from importlib import resources

    shipped = (resources.files("k3doctor.explain") / "kb" / PARSED_FILE).read_text(encoding="utf-8")
    assert shipped == render(), "kb/kb-parsed.json is out of date: run python tools/kb_parsed.py"


def _fields(sigs) -> list[tuple]:
    """What a signature is (Signature compares by identity): every field but the pattern caches."""
    import dataclasses

    return [tuple(getattr(s, f.name) for f in dataclasses.fields(s) if not f.name.startswith("_")) for s in sigs]


def test_signatures_from_the_parsed_kb_equal_those_parsed_from_toml():
    import json

    from k3doctor.explain.kb import parsed_mirror, parsed_tables

    texts = _kb_texts()
    mirror = json.dumps(parsed_mirror(texts))
    tables = parsed_tables(texts, mirror)
    assert set(tables) == set(CATEGORIES)
    for c, text in texts.items():
        assert _fields(parse_kb_text(text, c, c, tables[c])) == _fields(parse_kb_text(text, c, c)), c
    # load_kb (which reads the shipped file) gives the same signatures as parsing every TOML file
    assert _fields(KB) == _fields(s for c, t in texts.items() for s in parse_kb_text(t, c, c))
    assert len(KB) > 600


def test_an_edited_category_is_parsed_from_its_toml_not_from_the_stale_parsed_kb():
    import json

    from k3doctor.explain.kb import parsed_mirror, parsed_tables

    texts = _kb_texts()
    mirror = json.dumps(parsed_mirror(texts))
    edited = dict(texts, network=texts["network"].replace('title = "', 'title = "EDITED ', 1))
    tables = parsed_tables(edited, mirror)
    assert "network" not in tables and set(tables) == set(CATEGORIES) - {"network"}
    got = [s.title for s in parse_kb_text(edited["network"], "network", "n", tables.get("network"))]
    assert got[0].startswith("EDITED ")


@pytest.mark.parametrize("mirror", [None, "", "not json", "[]", '{"format": 2, "sha256": {}, "data": {}}',
                                    '{"format": 1, "sha256": [], "data": {}}',
                                    '{"format": 1, "sha256": {"network": "x"}, "data": []}'])
def test_a_missing_or_malformed_parsed_kb_means_parsing_the_toml(mirror):
    from k3doctor.explain.kb import parsed_tables

    assert parsed_tables(_kb_texts(), mirror) == {}


def test_load_kb_reads_the_parsed_kb_instead_of_parsing_toml(monkeypatch):
    """The point of the file: with it fresh, loading the KB parses no TOML at all."""
    import k3doctor.explain.kb as kbmod

    def no_toml(text: str):
        raise AssertionError("load_kb parsed TOML although kb/kb-parsed.json is fresh")

    kbmod.load_kb.cache_clear()
    try:
        monkeypatch.setattr(kbmod.tomllib, "loads", no_toml)
        assert _fields(kbmod.load_kb()) == _fields(KB)
    finally:
        monkeypatch.undo()
        kbmod.load_kb.cache_clear()
        kbmod.load_kb()


def test_kb_parsed_tool_names_a_broken_toml_file_instead_of_a_traceback(tmp_path, monkeypatch, capsys):
    import shutil

    import tools.kb_parsed as tool

    for c in CATEGORIES:
        shutil.copy(tool.KB / f"{c}.toml", tmp_path / f"{c}.toml")
    (tmp_path / "memory.toml").write_text("broken = [\n", encoding="utf-8")
    monkeypatch.setattr(tool, "KB", tmp_path)
    assert tool.main([]) == 2
    err = capsys.readouterr().err
    assert "memory.toml: not valid TOML" in err and "Traceback" not in err
    assert not (tmp_path / "kb-parsed.json").exists()  # nothing written
