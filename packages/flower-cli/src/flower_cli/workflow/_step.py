"""A workflow's step: what it runs (`Step`) and the types of the callables it may bring (``when``, ``gate``,
``reduce``, ``on_reject``), each of which may be sync or async and may ask for the run (a parameter named ``run``).
See ``_engine`` for what each field does as the step runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, TypeVar, Union

from ..runtime import AgentSpec, StepResult
from ._errors import WorkflowError
from ._state import Ctx, RunContext

__all__ = ["Gate", "OnFail", "OnReject", "Prompt", "Reduce", "Step", "When"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
MaybeAwaitable: TypeAlias = Union[T, Awaitable[T]]  # noqa: UP007 - a generic alias needs Union here
Prompt = str | Callable[[Ctx], str]
OnFail = Literal["stop", "skip", "continue"]
_ON_FAIL = ("stop", "skip", "continue")


class _OfCtx(Protocol[T_co]):
    """A ``when`` that asks for the run: ``when(ctx, run)``."""

    def __call__(self, ctx: Ctx, /, *, run: RunContext) -> MaybeAwaitable[T_co]: ...


class _OfResult(Protocol[T_co]):
    """A ``gate``, ``reduce`` or ``on_reject`` that asks for the run: ``gate(result, ctx, run)``."""

    def __call__(self, result: StepResult, ctx: Ctx, /, *, run: RunContext) -> MaybeAwaitable[T_co]: ...


When: TypeAlias = Callable[[Ctx], MaybeAwaitable[bool]] | _OfCtx[bool]
Gate: TypeAlias = Callable[[StepResult, Ctx], MaybeAwaitable[bool]] | _OfResult[bool]
Reduce: TypeAlias = Callable[[StepResult, Ctx], MaybeAwaitable[Any]] | _OfResult[Any]
OnReject: TypeAlias = Callable[[StepResult, Ctx], MaybeAwaitable[str]] | _OfResult[str]


@dataclass
class Step:
    """One step: ``spec`` runs ``prompt``; see the module docstring for what each field does."""

    name: str
    spec: AgentSpec
    prompt: Prompt
    when: When | None = None
    gate: Gate | None = None
    reduce: Reduce | None = None
    retries: int = 0
    on_fail: OnFail = "stop"
    on_reject: OnReject | None = None
    resume_prompt: Prompt | None = None
    resume_from: str | None = None  # the name of an earlier step whose session this one continues
    fork: bool = False  # with resume_from: branch off that session, leaving it untouched
    fresh_after_carried: bool = False  # a carried session whose rounds all fail the gate: one fresh launch

    def __post_init__(self) -> None:
        where = f"step {self.name!r}"
        if not isinstance(self.name, str) or not self.name.strip():
            raise WorkflowError("every step needs a non-empty name")
        if not isinstance(self.spec, AgentSpec):
            raise WorkflowError(
                f"{where}: spec must be an AgentSpec (e.g. from coordinator() or judge()), got {type(self.spec).__name__}"
            )
        if not (isinstance(self.prompt, str) or callable(self.prompt)):
            raise WorkflowError(f"{where}: prompt must be a string or a function of ctx")
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise WorkflowError(f"{where}: retries must be a whole number >= 0, got {self.retries!r}")
        if self.on_fail not in _ON_FAIL:
            raise WorkflowError(f"{where}: on_fail must be one of {', '.join(_ON_FAIL)}, got {self.on_fail!r}")
        for name in ("when", "gate", "reduce", "on_reject"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise WorkflowError(f"{where}: {name} must be a function, got {type(value).__name__}")
        if self.resume_prompt is not None and not (isinstance(self.resume_prompt, str) or callable(self.resume_prompt)):
            raise WorkflowError(f"{where}: resume_prompt must be a string or a function of ctx")
        if self.fork and self.resume_from is None:
            raise WorkflowError(f"{where}: fork=True needs resume_from (the session to branch off)")

    def render(self, ctx: Ctx, resuming: bool = False) -> str:
        """The prompt for this launch: ``resume_prompt`` when continuing a recorded session and one is set."""
        chosen = self.resume_prompt if resuming and self.resume_prompt is not None else self.prompt
        text = chosen(ctx) if callable(chosen) else chosen
        if not isinstance(text, str):
            raise TypeError(f"the prompt function returned {type(text).__name__}, not a string")
        return text
