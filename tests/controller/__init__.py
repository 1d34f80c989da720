"""Tests of the controller layer."""
