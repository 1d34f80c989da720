"""Fault injection into an embedded API server: `injector.py` holds the rules (set from a test or over HTTP)
that the REST surface consults; `admin_http.py` is the `/_omectl/` admin plane that sets them and drives the
server (restart, partition, compaction, the request log)."""
