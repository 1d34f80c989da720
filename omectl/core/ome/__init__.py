"""OME's pure logic: runtime chains, merges, model and runtime selection, rendering."""
