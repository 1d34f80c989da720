"""The generic controller runtime: the work queue, the cluster runtimes and their informers, minimal writes."""
