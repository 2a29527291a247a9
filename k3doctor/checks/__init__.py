"""Built-in check families, one module per family (registered through entry points)."""
