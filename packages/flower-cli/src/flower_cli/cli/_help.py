"""How a command's ``--help`` reads: what to type, an example, and where the global options are.

typer shows an argument as ``prompt <str>`` and a required one as ``{prompt}`` in the usage line (0.29), or
as ``[PROMPT]`` in the list (0.26): neither tells a person what to type. Here an argument is its metavar
(``PROMPT``, ``SESSION_ID``) everywhere, options carry their own metavars (``TOOLS``, ``USD``), and the
epilog — the command's example and the global options — is printed as written, not re-wrapped.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand, TyperGroup

from ._params import convert_without_pydantic

__all__ = ["GLOBAL_OPTIONS", "FlowerCommand", "FlowerGroup", "epilog"]

GLOBAL_OPTIONS = (
    "Global options, before or after the command (see `flower --help`):\n"
    "  -w PATH, -r PATH, -v, -W, -T, --json, --store URL"
)


def epilog(*examples: str, global_options: bool = True) -> str:
    """An epilog: the examples (one command line each, ``  # …`` comments allowed), then the global options."""
    lines = ["Example:" if len(examples) == 1 else "Examples:", *(f"  {e}" for e in examples)]
    return "\n".join(lines + (["", GLOBAL_OPTIONS] if global_options else []))


def _argument_name(param: Any) -> str:
    return str(param.metavar or (param.name or "").upper())


def _write_epilog(command: Any, formatter: Any) -> None:
    if not command.epilog:
        return
    formatter.write_paragraph()
    with formatter.indentation():
        for line in command.epilog.strip("\n").splitlines():
            formatter.write(f"{' ' * formatter.current_indent}{line}\n" if line else "\n")


class FlowerCommand(TyperCommand):
    """A command whose usage line and argument list name each argument by its metavar (and whose paths,
    strings and choices are converted without pydantic: see `_params`)."""

    def get_params(self, ctx: Any) -> list[Any]:
        # Here rather than at construction: typer adds the completion options later, and --help per context.
        params: list[Any] = super().get_params(ctx)
        convert_without_pydantic(params)
        return params

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name != "argument":
                continue
            name = _argument_name(param)
            name = name if param.required else f"[{name}]"
            pieces.append(name + ("..." if param.nargs != 1 else ""))
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments: list[tuple[str, str]] = []
        options: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            if getattr(param, "hidden", False):
                continue
            if param.param_type_name == "argument":
                text = str(getattr(param, "help", None) or "")
                arguments.append((_argument_name(param), text + ("  [required]" if param.required else "")))
            else:
                record = param.get_help_record(ctx)
                if record is not None:
                    options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        _write_epilog(self, formatter)


class FlowerGroup(TyperGroup):
    """A group (``flower``, ``flower sessions``) whose epilog is printed as written (and whose options convert
    without pydantic, as a command's)."""

    def get_params(self, ctx: Any) -> list[Any]:
        # Here rather than at construction: typer adds the completion options later, and --help per context.
        params: list[Any] = super().get_params(ctx)
        convert_without_pydantic(params)
        return params

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        _write_epilog(self, formatter)
