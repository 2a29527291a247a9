"""Safetensors checkpoint reading for k3doctor: headers only, never tensor data (except when
hashing or sampling is asked for), never writes, never executes code from the model directory.

Modules:

* :mod:`.header` — read and validate one shard header (the safetensors format rules);
* :mod:`.inventory` — :func:`~.inventory.iter_tensors` / :func:`~.inventory.read_config`
  (the public API other k3doctor parts use);
* :mod:`.layout` — Hugging Face ``local_dir`` / hub-cache detection and recorded hashes;
* :mod:`.scan` — the whole-checkpoint scan behind the ``model`` fact;
* :mod:`.quant` — quantised-tensor expectations from ``config.json``;
* :mod:`.hashing` — parallel, bounded-memory sha256 and zero-range sampling;
* :mod:`.manifest` — ``k3doctor manifest create`` documents.
"""
