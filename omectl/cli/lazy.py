"""Command groups whose subcommands are imported only when one of them runs.

`omectl --help` and `omectl runtime --help` list every command with its one-line help from a table here, so
printing help imports no command module (and so none of kubernetes_asyncio, aiohttp, OpenTelemetry or the API
models). The command that runs is imported on its own: `omectl cluster list` loads `omectl.cli.cluster` and what it
needs, nothing else. `tests/cli/test_startup.py` checks that each entry's help is the loaded command's own.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import typer
from typer import _click as click  # typer's own click (0.29 vendors it): the types its groups are built of
from typer.core import TyperCommand, TyperGroup


@dataclass(frozen=True)
class LazyCommand:
    """Where a command lives: `module.attr` is a command function, or a Typer app (a group, or with `command`
    set, the group's subcommand of that name)."""

    module: str
    attr: str
    help: str
    command: str | None = None

    def load(self, name: str) -> click.Command:
        target = getattr(importlib.import_module(self.module), self.attr)
        # Registered on a parent app as it would be on the real one, so it is built exactly the same way
        parent = typer.Typer()
        if isinstance(target, typer.Typer) and self.command is None:
            parent.add_typer(target, name=name)
        elif isinstance(target, typer.Typer):
            parent = target
        else:
            parent.command(name)(target)
        group = typer.main.get_group(parent)
        found = group.get_command(click.Context(group), self.command or name)
        assert found is not None, f"{self.module}.{self.attr} has no command {self.command or name!r}"
        found.name = name
        return found


class LazyGroup(TyperGroup):
    """A group whose `lazy` commands (name -> LazyCommand) load on first use; help lists the commands in `order`
    (names not in it after, eager ones first)."""

    lazy: dict[str, LazyCommand] = {}
    order: tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loaded: dict[str, click.Command] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        eager = [name for name in super().list_commands(ctx) if name not in self.lazy]
        names = [*eager, *self.lazy]
        rank = {name: index for index, name in enumerate(self.order)}
        return sorted(names, key=lambda name: rank.get(name, len(rank)))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._loaded:
            return self._loaded[cmd_name]
        entry = self.lazy.get(cmd_name)
        if entry is None:
            return super().get_command(ctx, cmd_name)
        # Listing for help: a stand-in with the table's help, nothing imported
        return TyperCommand(cmd_name, help=entry.help, short_help=entry.help)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] in self.lazy and args[0] not in self._loaded:
            self._loaded[args[0]] = self.lazy[args[0]].load(args[0])
        return super().resolve_command(ctx, args)

    def load(self, name: str) -> click.Command:
        """The real command `name` (imported now if it was not)."""
        if name not in self._loaded:
            self._loaded[name] = self.lazy[name].load(name)
        return self._loaded[name]
