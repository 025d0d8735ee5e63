"""Shipped workloads: each is a TOML plan plus the Python module it names."""
