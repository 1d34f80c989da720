"""OME's reconcilers: runtime status, engine workloads, runtime revisions, the shared chain resolver."""
