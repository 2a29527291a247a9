"""Garbage facts (a hand-edited or truncated snapshot) give findings or skips, never a crash."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from k3doctor.check import call_run
from k3doctor.checks import fs as F
from k3doctor.checks import net as N
from k3doctor.checks import oslimits as O
from k3doctor.facts import Facts
from k3doctor.model import Finding, Skip

GARBAGE: list[Any] = [None, 0, "x", [], {}, [None, 1, "a"], {"interfaces": "eth0"},
                      {"interfaces": [{"name": "eth0", "mtu": "abc", "operstate": 5, "ipv4": "10.0.0.1"}, 3],
                       "infiniband": [{"hca": None, "ports": "1"}, "x"], "hostname": "vm"},
                      {"entries": [{"key": "triton", "jit": True, "fs_class": "network", "free_bytes": "lots"}, 7],
                       "load_estimate": "fast"},
                      {"interface": 7, "error": 3, "side": [], "port": "x", "resolved": "10.0.0.1"},
                      {"shm": "big", "memlock": {"soft": "x"}, "nofile": [], "cgroup_memory_limit": "max"}]
LAUNCHES: list[Any] = [None, "sglang serve", {"env": "NCCL_SOCKET_IFNAME=eth0", "nnodes": "two", "tp": None},
                       {"env": {"NCCL_SOCKET_IFNAME": 5, "GLOO_SOCKET_IFNAME": None, "NCCL_IB_HCA": ""},
                        "nnodes": 2, "tp": 16, "load_format": 3}]


@pytest.mark.parametrize("check", N.CHECKS + F.CHECKS + O.CHECKS, ids=lambda c: c.code)
def test_no_crash_on_garbage(check: type) -> None:
    for value, launch in itertools.product(GARBAGE, LAUNCHES):
        values = {name: value for name in ("net", "rendezvous", "paths", "limits", "model", "cluster", "gpu", "env")}
        if launch is not None:
            values["launch"] = launch
        try:
            out = list(call_run(check(), Facts(values)))
        except Skip:
            continue
        assert all(isinstance(f, Finding) for f in out)
