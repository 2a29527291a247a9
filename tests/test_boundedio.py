"""The bounded reader: file types, caps and deadlines, each with one-line errors."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from k3doctor.boundedio import BoundedReadError, iter_chunks, open_fd, read_bytes, read_text


def test_regular_file_is_read(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    p.write_bytes(b'{"a": 1}')
    assert read_bytes(p, kind="config") == b'{"a": 1}'
    assert read_text(p, kind="config") == '{"a": 1}'


def test_missing_and_directory_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(BoundedReadError, match="no such file"):
        read_bytes(tmp_path / "nope.json", kind="config")
    with pytest.raises(BoundedReadError, match=r"is a directory"):
        read_bytes(tmp_path, kind="config")


def test_oversize_regular_file_refused_before_reading(tmp_path: Path) -> None:
    p = tmp_path / "big.json"
    with open(p, "wb") as f:
        f.truncate(10 << 20)          # sparse: 10 MiB reported, nothing written
    with pytest.raises(BoundedReadError, match=r"more than the 1\.0 MiB cap for a config file"):
        read_bytes(p, kind="config", cap=1 << 20)


def test_fifo_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    with pytest.raises(BoundedReadError, match="not a regular file"):
        read_bytes(fifo, kind="config")
    assert time.monotonic() - t0 < 2


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_character_device_refused_or_capped() -> None:
    with pytest.raises(BoundedReadError, match="character device"):
        read_bytes("/dev/zero", kind="config")
    with pytest.raises(BoundedReadError, match="cap"):
        read_bytes("/dev/zero", kind="log", cap=1 << 20, allow_stream=True)


@pytest.mark.skipif(not os.path.exists("/proc/self/pagemap"), reason="no procfs")
def test_proc_file_with_unreported_size_is_capped() -> None:
    try:
        data = read_bytes("/proc/self/pagemap", kind="config", cap=1 << 16)
    except BoundedReadError as exc:
        assert "cap" in str(exc) or "read failed" in str(exc)
    else:                                                   # some kernels return nothing unprivileged
        assert len(data) <= 1 << 16


def test_idle_stream_hits_the_deadline(tmp_path: Path) -> None:
    fifo = tmp_path / "log"
    os.mkfifo(fifo)
    w = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)          # a writer that never writes
    try:
        fd = open_fd(fifo, kind="log", allow_stream=True)
        t0 = time.monotonic()
        with pytest.raises(BoundedReadError, match="no data within 0.3 s"):
            list(iter_chunks(fd, path=fifo, kind="log", timeout=0.3))
        assert time.monotonic() - t0 < 2
        os.close(fd)
    finally:
        os.close(w)


def test_not_utf8_is_one_line(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(BoundedReadError, match=r"config\.json: is not UTF-8 text"):
        read_text(p, kind="config")
