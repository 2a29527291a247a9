"""A model directory whose config.json, index or a shard header has fields of the wrong type (or odd
values of the right one): `check --model` and `plan --model` end in a finding or a usage error,
never in a crashed probe or check (exit 3) or a traceback. Seeded, so a failure reproduces."""

from __future__ import annotations

import json
import random
import shutil
import struct
from pathlib import Path
import pytest
from click.testing import CliRunner

from fixtures.checkpoints.generate import make_small_real
from fixtures.hostile_run import mutate_json
from k3doctor.cli import main

def _mutate_dir(m: Path, what: str, rng: random.Random) -> None:
    k = rng.choice([1, 2, 5])
    if what in ("config.json", "model.safetensors.index.json"):
        (m / what).write_text(json.dumps(mutate_json(json.loads((m / what).read_text()), rng, k)))
        return
    shard = rng.choice(sorted(m.glob("*.safetensors")))
    raw = shard.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.dumps(mutate_json(json.loads(raw[8:8 + n]), rng, k)).encode()
    shard.write_bytes(struct.pack("<Q", len(header)) + header + raw[8 + n:])


@pytest.mark.slow
@pytest.mark.parametrize("what", ["config.json", "model.safetensors.index.json", "header"])
def test_mutated_model_dirs_never_crash(tmp_path: Path, what: str) -> None:
    base = tmp_path / "base"
    make_small_real(base)
    rng = random.Random(f"k3doctor-{what}")
    m = tmp_path / "m"
    for n in range(30):
        shutil.rmtree(m, ignore_errors=True)
        shutil.copytree(base, m)
        _mutate_dir(m, what, rng)
        args = [["check", "--model", str(m), "--format", "json", "--", "sglang", "serve", "--model-path", str(m),
                 "--tp", "2"],
                ["plan", "--model", str(m), "--target", "h200", "--tp", "4", "--ep", "4", "--format", "json"]][n % 2]
        r = CliRunner().invoke(main, args)
        assert r.exit_code in (0, 1, 2), (n, r.exit_code, r.output[-2000:])
        assert r.exception is None or isinstance(r.exception, SystemExit), (n, repr(r.exception))
        assert "Traceback" not in r.output, (n, r.output[-2000:])
        if args[0] == "check":
            assert json.loads(r.output)["summary"]["crashed"] == 0, (n, r.output[-2000:])
