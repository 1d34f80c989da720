"""The `omectl` / `kubectl-ome` command line."""
