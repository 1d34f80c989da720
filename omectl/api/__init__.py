"""Typed models of the CRDs omectl serves, and the generator of their CRD YAML."""
