"""Peers of omectl for the fleet-scale benchmark: the same reconcile in other frameworks."""
