"""The options that say which cluster a command reads: a kubeconfig and its context, a registered cluster, every
registered cluster, the clusters directory, and how long to wait for each."""

from __future__ import annotations

import typer

from omectl.fleet.providers import CLUSTERS_DIR_ENV

KUBECONFIG_OPTION = typer.Option(
    None, "--kubeconfig", help="Kubeconfig file (default: $KUBECONFIG, else ~/.kube/config).", show_default=False
)
CONTEXT_OPTION = typer.Option(None, "--context", help="Kubeconfig context (default: the current one).")
CLUSTER_OPTION = typer.Option(None, "--cluster", help="Read this registered cluster (see `omectl cluster list`).")
ALL_CLUSTERS_OPTION = typer.Option(False, "--all-clusters", help="Every registered cluster (see --clusters-dir).")
CLUSTERS_DIR_OPTION = typer.Option(
    None,
    "--clusters-dir",
    envvar=CLUSTERS_DIR_ENV,
    help="Directory of ClusterRegistration files (default: ./clusters).",
    show_default=False,
)
TIMEOUT_OPTION = typer.Option(10.0, "--timeout", min=0.1, help="Seconds to wait for each request to a cluster.")
