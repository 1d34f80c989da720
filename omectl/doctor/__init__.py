"""`omectl doctor`: checks of one member cluster, each PASS, WARN or FAIL with a one-line fix (`checks.py`)."""
