"""Tests of the admission webhook server."""
