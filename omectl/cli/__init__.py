"""The `omectl` / `kubectl-ome` command line."""


def main() -> None:
    """The console scripts' entry point: a Ctrl-C while the CLI itself loads exits 130 too, without a traceback."""
    try:
        from omectl.cli.main import main as run

        run()
    except KeyboardInterrupt:
        raise SystemExit(130) from None
