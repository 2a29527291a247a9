"""Probes: the only code that touches the machine. Each returns plain JSON-serialisable facts."""
