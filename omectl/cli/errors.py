"""The CLI's error boundary (issue 19 §3): input the operator can fix gets one line on stderr and an exit status,
never a traceback.

The root group (`omectl.cli.main.Commands`) runs every command through `describe`: a known failure (a
`CommandError`, a file that cannot be read or written, YAML that does not parse, a kubeconfig or registration that
cannot be used, settings that do not validate) becomes `error: <message>` and exit status 1 (a command's own
`CommandError` says which); anything else is a bug and keeps its traceback. Usage errors keep click's exit status 2,
as one line when stderr is not a terminal (`usage_line`).

Importing this module costs nothing beyond typer: the exception types of other modules are looked up in
`sys.modules`, since a module that was never imported raised nothing.
"""

from __future__ import annotations

import errno
import sys
from pathlib import Path
from typing import Any

import typer

from omectl.problems import one_line, output_problem, validation_problems, yaml_problem

__all__ = ["CommandError", "describe", "require_writable", "usage_line"]


class CommandError(Exception):
    """A one-line failure for the operator; `code` is the exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


# Exceptions whose `str()` already is the operator's one-line message: (module, class name).
_MESSAGE_ERRORS = (
    ("omectl.kube.errors", "KubeError"),
    ("omectl.fleet.registration", "RegistrationError"),
    ("omectl.fleet.runtime_state", "StateError"),
    ("omectl.settings", "SettingsError"),
    ("omectl.sim.fleet", "ManifestError"),
    ("omectl.sim.apiserver.server", "StateError"),
)


def describe(exc: BaseException) -> tuple[str, int] | None:
    """The one-line message and exit status for a failure the operator can fix; None for anything else."""
    if isinstance(exc, CommandError):
        return one_line(exc.message), exc.code
    for module, name in _MESSAGE_ERRORS:
        error_type = getattr(sys.modules.get(module), name, None)
        if error_type is not None and isinstance(exc, error_type):
            return one_line(exc), 1
    if isinstance(exc, OSError) and exc.errno != errno.EPIPE:
        return _os_problem(exc), 1
    yaml: Any = sys.modules.get("yaml")
    if yaml is not None and isinstance(exc, yaml.YAMLError):
        return f"not valid YAML: {yaml_problem(exc)}", 1
    pydantic: Any = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(exc, pydantic.ValidationError):
        return validation_problems(exc.errors()), 1
    return None


def _os_problem(exc: OSError) -> str:
    reason = exc.strerror or one_line(exc) or type(exc).__name__
    if exc.filename is None:
        return reason
    if exc.filename2 is not None:
        return f"{exc.filename} -> {exc.filename2}: {reason}"
    return f"{exc.filename}: {reason}"


def usage_line(exc: Any) -> str:
    """A click usage error (or other ClickException) as one line, pointing at the command's --help."""
    line = f"error: {one_line(exc.format_message())}"
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and ctx.command.get_help_option(ctx) is not None:
        line += f" (see '{ctx.command_path} {ctx.help_option_names[0]}')"
    return line


def require_writable(path: Path | None, option: str, *, directory: bool = False) -> None:
    """A usage error naming `option` when `path` cannot be written (`output_problem`): a serving command checks
    its outputs before it starts anything, rather than failing at its first write, or at shutdown."""
    if path is None:
        return
    problem = output_problem(path, directory=directory)
    if problem is not None:
        raise typer.BadParameter(f"{path} {problem}", param_hint=option)
