"""Observability of the controller: Prometheus metrics, the health/metrics HTTP server, structured logs, redaction.

`redact` imports nothing of omectl, so every layer (kube, fleet, tracing, webhook, controller, cli) may use it;
the rest stands below the controller and above nothing but `redact`.
"""
