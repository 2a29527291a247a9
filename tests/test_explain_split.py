"""``explain --log`` with forked stage-1 helpers on the later ranges of a file gives the report a
one-process scan gives (k3doctor/explain/split_scan.py), for two and more processes, and takes
the rest of a range back when its helper stops early."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from k3doctor.explain import split_scan
from k3doctor.explain.scan import BLOCK, Scanner

from benchmarks.bench_explain import NORMAL, PLANTED, SCATTERED, SPRINKLE, _fill

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")

SCANNER = Scanner()
WRAPPED = ("RuntimeError: CUDA error: an illegal memory access was encountered. CUDA kernel errors "
           "might be asynchronously reported at some other API call, so the stacktrace below might be "
           "incorrect. For debugging consider passing CUDA_LAUNCH_BLOCKING=1")


def summary(report) -> tuple:  # type: ignore[no-untyped-def]
    return ([(m.sig.id, m.count, m.first_file, m.first_line, m.excerpt, dict(m.values), list(m.locations),
              list(m.evidence), m.ts, m.confidence) for m in report.matches],
            report.lines_scanned, report.bytes_scanned, report.candidate_lines, report.notes)


def _log(path: Path, size: int, seed: int, extra: dict[int, bytes] | None = None) -> Path:
    """About ``size`` bytes of engine log; ``extra``: bytes put in at (about) these offsets."""
    rnd = random.Random(seed)
    out = bytearray()
    todo = sorted((extra or {}).items())
    while len(out) < size:
        if todo and len(out) >= todo[0][0]:
            out += todo.pop(0)[1]
        x = rnd.random()
        tpl = rnd.choice(SCATTERED if x < 0.001 else SPRINKLE if x < 0.005 else NORMAL)
        out += (_fill(tpl, rnd) + "\n").encode()
    out += (_fill(PLANTED[1], rnd) + "\n").encode()
    path.write_bytes(bytes(out))
    return path


def _same(path: Path, jobs: tuple[int, ...] = (2,)) -> None:
    one = SCANNER.explain_files([str(path)], jobs=1)
    for n in jobs:
        assert summary(SCANNER.explain_files([str(path)], jobs=n)) == summary(one), n
    assert one.matches and one.matches[0].sig.id == "torch-cuda-oom"


def test_a_split_scan_gives_the_one_process_report(tmp_path: Path) -> None:
    _same(_log(tmp_path / "a.log", 3 * BLOCK + 12345, 1), (2, 3))


def test_wrapped_lines_a_long_line_and_no_final_newline_around_the_split(tmp_path: Path) -> None:
    wrapped = "\n".join(WRAPPED[i:i + 80] for i in range(0, len(WRAPPED), 80)).encode() + b"\n"
    long_line = b"INFO " + b"x" * (BLOCK // 3) + b" CUDA error: out of memory\n"
    path = _log(tmp_path / "b.log", 4 * BLOCK, 2, {BLOCK * 2 - 100: wrapped, BLOCK * 2 - 50: long_line,
                                                   BLOCK * 3 + 7: wrapped})
    with open(path, "ab") as f:
        f.write(b"[rank3]: NCCL WARN Net : Connection closed by remote peer")  # no newline at the end
    _same(path)


def test_many_processes_give_the_one_process_report_across_every_cut(tmp_path: Path) -> None:
    """A wrapped line and a long line across every block boundary, cut for 2 to 13 processes
    (more processes than blocks too), the last line without a newline."""
    wrapped = "\n".join(WRAPPED[i:i + 80] for i in range(0, len(WRAPPED), 80)).encode() + b"\n"
    long_line = b"INFO " + b"x" * (BLOCK // 3) + b" CUDA error: out of memory\n"
    extra = {}
    for k in range(1, 9):
        extra[BLOCK * k - 100] = wrapped
        extra[BLOCK * k - 40] = long_line
    path = _log(tmp_path / "m.log", 9 * BLOCK + 777, 11, extra)
    with open(path, "ab") as f:
        f.write(b"[rank3]: NCCL WARN Net : Connection closed by remote peer")
    _same(path, (2, 3, 4, 5, 8, 13))


def test_a_line_longer_than_max_line_after_the_split_is_taken_back(tmp_path: Path) -> None:
    huge = b"INFO " + b"y" * (split_scan.MAX_LINE + BLOCK) + b"\n"
    _same(_log(tmp_path / "c.log", 4 * BLOCK, 3, {BLOCK * 3: huge}), (2, 4))


def test_a_cut_inside_a_line_longer_than_a_block_is_dropped(tmp_path: Path) -> None:
    """No newline in the block before a cut: that cut goes, the range before it reads on."""
    from k3doctor.explain.split_scan import boundaries

    cut = boundaries(0, 6 * BLOCK, 3, BLOCK)[-1]
    path = _log(tmp_path / "k.log", 6 * BLOCK, 12, {cut - BLOCK - 400: b"INFO " + b"z" * (BLOCK + 999) + b"\n"})
    assert boundaries(0, path.stat().st_size, 3, BLOCK)[-1] == cut
    with open(path, "rb") as f:
        f.seek(cut - BLOCK)
        assert b"\n" not in f.read(BLOCK)
    _same(path, (2, 3, 4, 6))


def test_the_parent_takes_a_smaller_range_the_more_helpers_there_are() -> None:
    from k3doctor.explain.split_scan import boundaries, parent_share

    assert parent_share(1) == 1.0
    assert 0.44 < parent_share(2) < 0.46
    shares = [parent_share(n) for n in range(2, 10)]
    assert shares == sorted(shares, reverse=True) and all(0.0 <= x < 0.5 for x in shares)
    cuts = boundaries(0, 256 * BLOCK, 4, BLOCK)
    assert len(cuts) == 3 and cuts == sorted(set(cuts)) and cuts[0] >= BLOCK
    sizes = [b - a for a, b in zip(cuts, cuts[1:] + [256 * BLOCK])]
    assert max(sizes) - min(sizes) <= BLOCK and cuts[0] < min(sizes)
    assert boundaries(0, 3 * BLOCK, 8, BLOCK) == [BLOCK, 2 * BLOCK]  # a block each at most
    assert boundaries(0, BLOCK, 4, BLOCK) == [] and boundaries(0, 100 * BLOCK, 1, BLOCK) == []


def test_usable_cpus_follows_a_cgroup_quota(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    quota = tmp_path / "cpu.max"
    monkeypatch.setattr(split_scan, "_CPU_MAX", str(quota))
    monkeypatch.setattr(split_scan.os, "sched_getaffinity", lambda _pid: set(range(64)), raising=False)
    assert split_scan.usable_cpus() == 64  # no such file
    quota.write_text("max 100000\n")
    assert split_scan.usable_cpus() == 64
    quota.write_text("250000 100000\n")
    assert split_scan.usable_cpus() == 2
    quota.write_text("50000 100000\n")
    assert split_scan.usable_cpus() == 1
    quota.write_text("garbage\n")
    assert split_scan.usable_cpus() == 64
    monkeypatch.setattr(split_scan, "_CPU_MAX", str(tmp_path / "none"))  # cgroup v1
    cfs_q, cfs_p = tmp_path / "cpu.cfs_quota_us", tmp_path / "cpu.cfs_period_us"
    monkeypatch.setattr(split_scan, "_CFS_QUOTA", str(cfs_q))
    monkeypatch.setattr(split_scan, "_CFS_PERIOD", str(cfs_p))
    cfs_q.write_text("-1\n")
    cfs_p.write_text("100000\n")
    assert split_scan.usable_cpus() == 64
    cfs_q.write_text("400000\n")
    assert split_scan.usable_cpus() == 4


def test_a_failed_fork_leaves_its_range_to_the_parent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _log(tmp_path / "n.log", 8 * BLOCK, 13)
    one = SCANNER.explain_files([str(path)], jobs=1)
    real, calls = os.fork, []

    def flaky() -> int:
        calls.append(1)
        if len(calls) == 2:
            raise OSError(11, "Resource temporarily unavailable")
        return real()

    monkeypatch.setattr(split_scan.os, "fork", flaky)
    assert summary(SCANNER.explain_files([str(path)], jobs=4)) == summary(one)
    assert len(calls) == 3


def test_a_helper_that_dies_is_taken_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _log(tmp_path / "d.log", 3 * BLOCK, 4)
    one = SCANNER.explain_files([str(path)], jobs=1)

    def dies(*_a: object) -> None:
        os._exit(0)

    monkeypatch.setattr(split_scan, "_child", dies)
    for n in (2, 3):
        assert summary(SCANNER.explain_files([str(path)], jobs=n)) == summary(one)


@pytest.mark.parametrize("budget, value", [("MAX_SPANS", 10), ("MAX_SENT", 1 << 10)])
def test_a_helper_over_its_budget_hands_back_the_rest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      budget: str, value: int) -> None:
    """Past its candidate (span or byte) budget the helper stops; the parent scans the rest."""
    path = _log(tmp_path / "e.log", 3 * BLOCK, 5)
    one = SCANNER.explain_files([str(path)], jobs=1)
    monkeypatch.setattr(split_scan, budget, value)  # (the child is forked: it sees this too)
    for n in (2, 3):
        assert summary(SCANNER.explain_files([str(path)], jobs=n)) == summary(one)


def test_small_files_and_one_cpu_are_scanned_in_one_process(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path = _log(tmp_path / "f.log", 3 * BLOCK, 6)
    forks: list[int] = []
    real = split_scan.Helper.start

    def counted(*a, **k):  # type: ignore[no-untyped-def]
        forks.append(1)
        return real(*a, **k)

    monkeypatch.setattr(split_scan.Helper, "start", counted)
    SCANNER.explain_files([str(path)])  # auto: 12 MiB is under SPLIT_MIN
    monkeypatch.setattr(split_scan, "SPLIT_MIN", 1 << 20)
    monkeypatch.setattr("k3doctor.explain.scan.SPLIT_MIN", 1 << 20)
    monkeypatch.setattr("k3doctor.explain.scan.usable_cpus", lambda: 1)
    SCANNER.explain_files([str(path)])
    assert forks == []
    monkeypatch.setattr("k3doctor.explain.scan.usable_cpus", lambda: 2)
    monkeypatch.setattr("k3doctor.explain.scan.RANGE_MIN", 1 << 20)
    SCANNER.explain_files([str(path)])
    assert forks == [1]
    monkeypatch.setattr("k3doctor.explain.scan.usable_cpus", lambda: 64)  # 12 MiB: 3 blocks, 3 processes
    SCANNER.explain_files([str(path)])
    assert forks == [1, 1, 1]
    monkeypatch.setattr("k3doctor.explain.scan.RANGE_MIN", 6 << 20)  # each range >= 6 MiB: 2 processes
    SCANNER.explain_files([str(path)])
    assert forks == [1, 1, 1, 1]


def test_no_helper_process_is_left_behind(tmp_path: Path) -> None:
    """The command forks, scans and reaps: no zombie or orphan stays (checked from a fresh process
    that lists its own children afterwards)."""
    path = _log(tmp_path / "g.log", 3 * BLOCK, 7)
    code = ("import os, sys\nfrom k3doctor.explain.scan import Scanner\n"
            f"Scanner().explain_files([{str(path)!r}], jobs=2)\n"
            "kids = [d for d in os.listdir('/proc') if d.isdigit() and "
            "open(f'/proc/{d}/stat').read().split(')')[1].split()[1] == str(os.getpid())]\n"
            "print(len(kids))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0"


def test_the_cli_takes_jobs(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from k3doctor.cli import main

    path = _log(tmp_path / "h.log", 2 * BLOCK + 999, 8)
    runs = [CliRunner().invoke(main, ["explain", "--log", str(path), "--jobs", j, "--format", "json"])
            for j in ("1", "2", "3")]
    assert [r.exit_code for r in runs] == [0, 0, 0]
    assert len({r.output.replace(" ", "").split('"elapsed')[0] for r in runs}) == 1
    for bad in ("0", "65", "two"):
        assert CliRunner().invoke(main, ["explain", "--log", str(path), "--jobs", bad]).exit_code == 2


def test_closing_a_helper_twice_touches_nothing_else(tmp_path: Path) -> None:
    """``close`` closes the pipe and reaps the child once: a second call (the scan closes each
    helper when done and again on the way out) neither closes a reused descriptor nor signals a
    reused pid."""
    path = _log(tmp_path / "p.log", 3 * BLOCK, 14)
    fd = os.open(path, os.O_RDONLY)
    try:
        [helper] = split_scan.start_helpers(SCANNER, fd, 0, path.stat().st_size, 2)
        list(helper.blocks())
        helper.close()
        other = os.open(path, os.O_RDONLY)  # may take the pipe's old number
        try:
            helper.close()
            os.fstat(other)  # still open
        finally:
            os.close(other)
        assert helper.pid is None and helper.rfd == -1
    finally:
        os.close(fd)
