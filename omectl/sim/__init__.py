"""The embedded Kubernetes API server: one instance per simulated cluster."""
