"""Option values converted without pydantic, the way typer converts them.

typer 0.29 converts every value that is not a boolean flag through a pydantic ``TypeAdapter``, built the first
time a command line is parsed: importing pydantic and building the adapters costs ~0.25 s, and flower's global
options (``-w PATH``, ``--store URL``, ``--color``) meet it on every command — a sixth of what ``flower
analyze`` is allowed in all. Every value flower's commands take that is a path, a string or a choice is
converted here instead (and a flag's missing value passed through), by typer's own pydantic-free steps (``coerce_cli_path``, ``coerce_cli_choice``), with
the same result and, for a bad value, the same message (tests/cli/test_params.py holds both to typer's). Other
types (numbers, lists) keep typer's own conversion, which is built only if such an option is parsed.

typer has no public hook for a parameter's conversion, so this fills typer's own lazily filled slot
(``_TyperParameter._runtime_param``) before typer does. Where that slot or typer's helpers are not what this
expects (typer before 0.29 converts with click types and imports no pydantic; a later typer may differ),
nothing is installed and typer converts as it always has: slower, never different.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

__all__ = ["convert_without_pydantic"]


def _light_class() -> type | None:
    """The `RuntimeParam` subclass converting paths, strings and choices; None when typer is not as expected."""
    try:  # why: typer's private modules, as 0.29 has them; another typer converts as it always has
        from typer._click.exceptions import BadParameter
        from typer._click.utils import _escape_control_characters
        from typer._coercion import RuntimeParam, build_runtime_param, resolve_type_descriptor
        from typer._param_types import coerce_cli_choice, coerce_cli_path
    except ImportError:
        return None

    class _Light(RuntimeParam):
        """typer's conversion of a path, a string or an enum choice, minus the pydantic adapter around it."""

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            annotation = self.annotation
            info = self.parameter_info
            if annotation is str and type(value) is str:
                return value  # typer's adapter: str(value) for a str
            if annotation is bool and type(value) is bool:
                return value  # (typer skips a flag's bool itself, but not --help's or the completion options')
            if annotation is Path and isinstance(value, Path):
                return coerce_cli_path(value, info, path_type=Path, param=param, ctx=ctx)
            if annotation is Path and type(value) is str:
                # typer validates Path(value) but checks (and names in its messages) the string typed.
                return Path(cast(str, coerce_cli_path(value, info, path_type=None, param=param, ctx=ctx)))
            if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
                try:
                    return coerce_cli_choice(
                        value, choices=tuple(annotation), case_sensitive=info.case_sensitive, ctx=ctx
                    )
                except ValueError as exc:  # as pydantic words a validator's ValueError, and typer shows it
                    raise BadParameter(
                        _escape_control_characters(f"Value error, {exc}"), ctx=ctx, param=param
                    ) from None
            # Anything else (bytes from a test runner, say): typer's own conversion.
            typer_param = build_runtime_param(resolve_type_descriptor(annotation, info))
            return typer_param._coerce_value(value, param=param, ctx=ctx)

    return _Light


_LIGHT: list[type | None] = []


def convert_without_pydantic(params: Iterable[Any]) -> None:
    """Give each path, string or choice parameter among ``params`` (a command's typer parameters) the
    pydantic-free conversion; leave every other parameter, and every parameter of an unexpected typer, alone."""
    if not _LIGHT:
        _LIGHT.append(_light_class())
    light = _LIGHT[0]
    if light is None:
        return
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", False) is not None:
            continue  # not typer 0.29's lazily filled slot, or already filled
        annotation = descriptor.annotation
        info = descriptor.parameter_info
        if getattr(info, "parser", None) is not None or descriptor.file_annotation is not None:
            continue
        if param.multiple or param.nargs != 1:
            continue  # lists and tuples: typer's conversion
        if annotation is Path and getattr(info, "path_type", None) is None and descriptor.is_path:
            pass
        elif annotation in (str, bool) or (isinstance(annotation, type) and issubclass(annotation, enum.Enum)):
            pass
        else:
            continue
        param._runtime_param = light(parameter_info=info, annotation=annotation)
