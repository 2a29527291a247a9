"""Interface-name selectors: NCCL's prefix lists, Gloo's exact lists, TensorPipe, ``NCCL_IB_HCA``.

NCCL (``NCCL_SOCKET_IFNAME``, ``NCCL_IB_HCA``): a comma list of *prefixes*; a leading ``^``
excludes, a leading ``=`` asks for exact names (``^=`` combines both). Only the first character(s)
of the whole value are special: ``eth0,^lo`` is the prefixes ``eth0`` and ``^lo``.
Gloo (``GLOO_SOCKET_IFNAME``): a comma list of *exact* names, no ``^``/``=``; every process must
list the same number. TensorPipe (``TP_SOCKET_IFNAME``): one exact name.
Linux interface names are 1–15 bytes without ``/``, ``:`` or whitespace (``dev_valid_name``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

__all__ = [
    "Selector",
    "parse_nccl",
    "parse_gloo",
    "parse_tp",
    "match",
    "item_matches",
    "valid_ifname",
    "VIRTUAL_PREFIXES",
    "is_plumbing",
]

IFNAMSIZ = 16

#: Name prefixes of container / VPN plumbing that NCCL/Gloo should not pick for cross-node traffic.
VIRTUAL_PREFIXES = (
    "docker", "veth", "br-", "virbr", "cni", "flannel", "cali", "tailscale", "tunl", "vxlan",
    "weave", "kube-ipvs", "cilium", "lxc", "ifb", "dummy", "wg", "zt", "podman", "nerdctl",
)


def is_plumbing(name: str) -> bool:
    """True for container/VPN plumbing names (docker0, veth…, cni0, flannel.1, cali…, tailscale0)."""
    return name == "lo" or name.startswith(VIRTUAL_PREFIXES)


def valid_ifname(name: str) -> bool:
    """Whether ``name`` could be a Linux interface name."""
    return (
        0 < len(name.encode("utf-8", "surrogateescape")) < IFNAMSIZ
        and name not in (".", "..")
        and not any(c in name for c in "/:") and not any(c.isspace() for c in name)
    )


@dataclass(frozen=True)
class Selector:
    """A parsed interface/HCA selector."""

    variable: str
    raw: str
    exclude: bool = False
    exact: bool = False
    items: tuple[str, ...] = ()
    #: HCA selectors: item -> port (None = any port)
    ports: tuple[int | None, ...] = ()
    errors: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())


def _split(raw: str) -> list[str]:
    return raw.split(",")


def parse_nccl(variable: str, raw: str, *, hca: bool = False) -> Selector:
    """Parse an NCCL selector (``NCCL_SOCKET_IFNAME`` or, with ``hca=True``, ``NCCL_IB_HCA``)."""
    errors: list[str] = []
    warnings: list[str] = []
    text = raw
    if text != text.strip():
        warnings.append(f"{variable} has leading/trailing whitespace ({raw!r}); NCCL does not strip it")
        text = text.strip()
    exclude = text.startswith("^")
    if exclude:
        text = text[1:]
    exact = text.startswith("=")
    if exact:
        text = text[1:]
    items: list[str] = []
    ports: list[int | None] = []
    if not text:
        errors.append(f"{variable}={raw!r} selects nothing (empty list)")
    for item in _split(text) if text else []:
        name, port = item, None
        if hca and ":" in item:
            name, _, rest = item.partition(":")
            port_text = rest.split(":", 1)[0]
            if port_text.isdigit():
                port = int(port_text)
            else:
                errors.append(f"{variable}: port {port_text!r} in {item!r} is not a number")
        if not name:
            errors.append(f"{variable}={raw!r} has an empty entry (stray comma)")
            continue
        if name[0] in "^=":
            errors.append(
                f"{variable}: {item!r} — '^' and '=' are only special at the very start of the value; "
                f"here they are part of a name that matches nothing"
            )
        elif any(c.isspace() for c in name) or "/" in name or (not hca and ":" in name):
            errors.append(f"{variable}: {item!r} cannot be an interface name (whitespace, '/' or ':')")
        elif len(name.encode("utf-8", "surrogateescape")) >= IFNAMSIZ and not hca:
            errors.append(f"{variable}: {item!r} is longer than 15 bytes, no interface can have that name")
        items.append(name)
        ports.append(port)
    return Selector(variable, raw, exclude, exact, tuple(items), tuple(ports), tuple(errors), tuple(warnings))


def parse_gloo(variable: str, raw: str) -> Selector:
    """Parse ``GLOO_SOCKET_IFNAME`` (exact names; ``^``/``=`` are NCCL syntax Gloo does not know)."""
    errors: list[str] = []
    items: list[str] = []
    if not raw.strip():
        errors.append(f"{variable}={raw!r} is empty")
    else:
        for item in raw.split(","):
            if not item:
                errors.append(f"{variable}={raw!r} has an empty entry (stray comma)")
                continue
            if item.startswith("^") or item.startswith("="):
                errors.append(
                    f"{variable}={raw!r}: Gloo takes exact interface names only; {item!r} is NCCL syntax "
                    f"(Gloo fails with \"Unable to find address for: {item}\")"
                )
            elif not valid_ifname(item):
                errors.append(f"{variable}: {item!r} cannot be an interface name (whitespace, '/', ':' or > 15 bytes)")
            items.append(item)
    return Selector(variable, raw, False, True, tuple(items), tuple(None for _ in items), tuple(errors))


def parse_tp(variable: str, raw: str) -> Selector:
    """Parse ``TP_SOCKET_IFNAME`` (TensorPipe: one exact interface name)."""
    sel = parse_gloo(variable, raw)
    errors = list(sel.errors)
    if len(sel.items) > 1:
        errors.append(f"{variable}={raw!r}: TensorPipe takes one interface name, not a list")
    return Selector(variable, raw, False, True, sel.items, sel.ports, tuple(errors))


def _hit(name: str, item: str, exact: bool) -> bool:
    return name == item if exact else name.startswith(item)


def match(sel: Selector, names: Iterable[str]) -> list[str]:
    """The names a selector picks, in the order given."""
    names = list(names)
    if sel.exclude:
        return [n for n in names if not any(_hit(n, it, sel.exact) for it in sel.items)]
    return [n for n in names if any(_hit(n, it, sel.exact) for it in sel.items)]


def item_matches(sel: Selector, names: Sequence[str]) -> dict[str, list[str]]:
    """For each item of a selector, the names it matches (prefix or exact)."""
    return {it: [n for n in names if _hit(n, it, sel.exact)] for it in sel.items}

