"""Pure logic for the host-environment families (NET, FS, OS) and ``k3doctor env``.

Nothing in this package touches the machine: parsers take text, matchers take names, resolvers
take mappings. The probes in :mod:`k3doctor.probes.net`, :mod:`k3doctor.probes.fs` and
:mod:`k3doctor.probes.oslimits` feed them what they read.
"""

from __future__ import annotations

__all__: list[str] = []
