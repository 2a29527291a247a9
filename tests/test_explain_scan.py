"""Log mode: streaming, encodings, ANSI, many files, ranking, collapsing, bounded memory."""

from __future__ import annotations

import io
import tracemalloc


from k3doctor.explain import scan as scan_mod
from k3doctor.explain.scan import Scanner, explain_paths

SC = Scanner()

FILLER = "[2026-11-30 10:00:{s:02d} TP{r}] Decode batch. #running-req: 32, #token: 4096, token usage: 0.05, cuda graph: True, gen throughput (token/s): 1534.21\n"


def write(tmp_path, name, text: str | bytes):
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(p)


def ids(report):
    return [m.sig.id for m in report.matches]


def test_line_numbers_counts_and_collapsing(tmp_path):
    lines = [FILLER.format(s=i % 60, r=0) for i in range(500)]
    wd = ("[rank0]:[E1130 10:10:00.1 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
          "timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n")
    for at in (100, 200, 300, 400):
        lines[at] = wd
    p = write(tmp_path, "rank0.log", "".join(lines))
    r = explain_paths([p])
    assert ids(r) == ["nccl-watchdog-timeout"]
    m = r.matches[0]
    assert m.count == 4
    assert m.first_line == 101 and m.locations == [f"{p}:101", f"{p}:201", f"{p}:301", f"{p}:401"]
    assert "ALLREDUCE waited 600000 ms" in m.cause
    assert r.lines_scanned == 500


def test_earliest_cause_outranks_symptoms_across_rank_logs(tmp_path):
    # rank 0 only shows the watchdog timeout (later); rank 5 shows the real OOM (earlier)
    r0 = ("[2026-11-30 10:00:01 TP0] Load weight begin.\n"
          "[rank0]:[E1130 10:10:05.0 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600100 milliseconds before timing out.\n")
    r5 = ("[2026-11-30 10:00:01 TP5] Load weight begin.\n"
          "[2026-11-30 10:00:07 TP5] Scheduler hit an exception: Traceback (most recent call last):\n"
          "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 16.00 GiB. GPU 5 has a total capacity of 139.81 GiB of which 2.00 GiB is free.\n"
          "[rank5]:[W1130 10:00:08.0 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL.\n")
    paths = [write(tmp_path, "rank0.log", r0), write(tmp_path, "rank5.log", r5)]
    r = explain_paths(paths)
    got = ids(r)
    assert got[0] == "torch-cuda-oom", got
    assert got.index("nccl-watchdog-timeout") > 0
    assert got[-1] == "pg-not-destroyed" and r.matches[-1].benign
    assert r.matches[0].first_file.endswith("rank5.log") and r.matches[0].first_line == 3


def test_gloo_failure_outranks_watchdog_and_waiting_ranks(tmp_path):
    a = write(tmp_path, "node0.log",
              "[2026-11-30 09:00:30] other ranks didn't finish loading in time, waiting\n"
              "[rank1]:[E1130 09:10:00.0 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600100 milliseconds before timing out.\n")
    b = write(tmp_path, "node1.log",
              "[2026-11-30 09:00:02] Init torch distributed begin.\n"
              "[rank9]:[E1130 09:00:03.0 ProcessGroupGloo.cpp:144] Gloo connectFullMesh failed with [pair.cc:144] no error\n")
    r = explain_paths([a, b])
    assert ids(r)[0] == "gloo-connectfullmesh"
    assert set(ids(r)[1:]) == {"nccl-watchdog-timeout", "other-ranks-not-finished"}


def test_non_utf8_ansi_and_crlf(tmp_path):
    data = (b"\xff\xfe garbage \x80\x81 line\r\n"
            b"\x1b[1;31mRuntimeError\x1b[0m: CUDA error: \x1b[33mno kernel image is available for execution on the device\x1b[0m\r\n"
            b"caf\xe9 \xc3\x28 more junk\n")
    r = explain_paths([write(tmp_path, "bad.log", data)])
    assert ids(r) == ["no-kernel-image"]
    assert r.matches[0].first_line == 2
    assert "\x1b" not in r.matches[0].excerpt and "\r" not in r.matches[0].excerpt


def test_blocks_boundaries_and_long_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(scan_mod, "BLOCK", 64)  # force many block boundaries
    monkeypatch.setattr(scan_mod, "MAX_LINE", 4096)
    body = "".join(f"ordinary line {i} with some words in it\n" for i in range(50))
    body += "x" * 10000 + "\n"  # longer than MAX_LINE: cut, not an unbounded carry
    body += "ValueError: K3 latent-MoE tail fusion requires SM100.\n"
    body += "".join(f"ordinary line {i}\n" for i in range(20))
    body += "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge"  # no final newline
    r = Scanner().explain_files([write(tmp_path, "b.log", body)])
    got = {m.sig.id: m.first_line for m in r.matches}
    assert got["k3-tail-fusion-requires-sm100"] > 50
    assert "safetensors-header-too-large" in got
    assert list(got) == ["k3-tail-fusion-requires-sm100", "safetensors-header-too-large"]


def test_line_numbers_exact_across_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(scan_mod, "BLOCK", 100)
    lines = [f"line {i}\n" for i in range(1, 301)]
    lines[236] = "RuntimeError: cp_world_size must be positive, required by downstream unified code path.\n"
    r = Scanner().explain_files([write(tmp_path, "c.log", "".join(lines))])
    assert r.matches[0].first_line == 237


def test_stdin_and_files_together(tmp_path, monkeypatch):
    import sys

    p = write(tmp_path, "x.log", "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    fake = io.TextIOWrapper(io.BytesIO(b"NVRM: Xid (PCI:0000:1b:00): 95, pid=1, name=p, Uncontained\n"))
    monkeypatch.setattr(sys, "stdin", fake)
    r = explain_paths([p, "-"])
    assert ids(r) == ["xid-95", "cuda-illegal-memory-access"]  # cause tier beats generic tier
    assert r.matches[0].first_file == "<stdin>"


def test_bounded_memory_on_a_large_log(tmp_path):
    p = tmp_path / "big.log"
    with open(p, "w") as f:
        block = "".join(FILLER.format(s=i % 60, r=i % 8) for i in range(2000))
        for _ in range(100):  # ~30 MB
            f.write(block)
            f.write("[2026-11-30 10:00:00 TP3] Using default MoE config. Performance might be sub-optimal! Config file not found\n")
        f.write("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 3 has a total capacity of 139.8 GiB of which 0.5 GiB is free.\n")
    tracemalloc.start()
    r = explain_paths([str(p)])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert p.stat().st_size > 25_000_000
    assert peak < 32 * 1024 * 1024, peak  # a few blocks, not the file
    assert ids(r) == ["torch-cuda-oom", "default-moe-config"]
    assert r.matches[1].count == 100


def test_nothing_recognised(tmp_path):
    r = explain_paths([write(tmp_path, "ok.log", FILLER.format(s=1, r=0) * 10)])
    assert not r.recognised and r.matches == []


def test_reason_line_after_last_error_across_blocks(tmp_path, monkeypatch):
    """NCCL puts the reason on the line after 'Last error:'; its keyword is an anchor of its own."""
    monkeypatch.setattr(scan_mod, "BLOCK", 32)
    text = ("x" * 20 + "\n") * 5 + (
        "ncclInternalError: Internal check failed.\nLast error:\nBootstrap : no socket interface found\n")
    r = Scanner().explain_files([write(tmp_path, "f.log", text)])
    assert ids(r) == ["nccl-no-socket-interface"] and r.matches[0].first_line == 8
    # alone too: log mode examines every line that carries a keyword, as text mode does
    lone = write(tmp_path, "g.log", "Bootstrap : no socket interface found\n")
    assert ids(Scanner().explain_files([lone])) == ["nccl-no-socket-interface"]
    assert ids(Scanner().explain_bytes(b"Bootstrap : no socket interface found\n")) == ["nccl-no-socket-interface"]


def test_log_scan_reports_progress_in_bytes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from k3doctor.explain import explain_paths

    log = tmp_path / "rank0.log"
    line = b"INFO nothing to see here, just a long and boring line of a healthy rank\n"
    log.write_bytes(line * 200_000)  # ~14 MB: several 4 MiB blocks
    seen: list[int] = []
    explain_paths([str(log)], progress=seen.append)
    assert len(seen) >= 3 and seen == sorted(seen) and seen[-1] == log.stat().st_size


def test_without_the_c_extension_the_python_prefilter_is_used(monkeypatch, tmp_path):
    """Where ``_litscan`` was not built (no C compiler at install time), stage 1 is the Python
    prefilter, ``k3doctor version`` says so, and a log scan still finds the error."""
    from click.testing import CliRunner

    from k3doctor.cli import main
    from k3doctor.explain import literal_scan

    monkeypatch.setattr(literal_scan, "_litscan", None)
    assert not literal_scan.available() and "not built" in literal_scan.stage1_description()
    scanner = Scanner()
    assert literal_scan.build(scanner.prefilter, b"") is None
    log = tmp_path / "rank0.log"
    log.write_bytes(b"INFO ok\n" * 1000 + b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    report = scanner.explain_files([str(log)], jobs=1)
    assert report.matches and report.matches[0].sig.category == "memory"
    assert scanner._literal is None
    out = CliRunner().invoke(main, ["version"]).output
    assert "explain --log stage 1: pure Python" in out
