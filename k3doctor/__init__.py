"""k3doctor: preflight diagnostics for multi-node MoE serving with SGLang and vLLM."""

__version__ = "0.1.0"
