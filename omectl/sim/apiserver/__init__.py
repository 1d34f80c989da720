"""The embedded Kubernetes API server: REST over aiohttp, the store, apply, schemas, discovery, tables."""
