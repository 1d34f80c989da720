"""Benchmarks of omectl's components (run with `make bench`)."""
