"""``python -m k3doctor``."""

from .cli import main

main()
