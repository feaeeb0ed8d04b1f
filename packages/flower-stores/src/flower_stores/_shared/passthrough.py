"""Wrappers that present exactly the methods of the store they wrap (the layers, the fenced view).

The SDK decides which optional methods a store has by probing (``getattr`` on the instance, then comparing
the class attribute with the protocol's ``NotImplementedError`` default — see ``_store_implements`` in the
SDK). A wrapper that defined all of them would claim, say, ``list_subkeys`` for a backend without it and
make every resume fail. So each wrapper instance is of a `variant` class that has exactly the optional
methods its backend has: one mixin per capability, each passing the call straight to ``self.backend``.

A mixin names each method it passes through as ``Forward(Protocol.method)``: the signature is the protocol's,
declared there once, and the call goes to the backend's method of the same name. The mixins of flower's own
seams sit beside their protocols (`SessionIndex`, `SessionLeases`, `RunRecords`); the SDK's optional methods
and ``projects`` are here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Concatenate, Generic, ParamSpec, TypeVar, cast, overload

if TYPE_CHECKING:
    from claude_agent_sdk import SessionKey, SessionListSubkeysKey, SessionStoreListEntry, SessionSummaryEntry

__all__ = [
    "ALL_SDK_MIXINS",
    "OPTIONAL_METHODS",
    "Forward",
    "ForwardValue",
    "SdkMethodsThrough",
    "Wrapper",
    "forwarded",
    "has_all",
    "implements",
    "sdk_mixins",
    "variant",
]

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
W = TypeVar("W")

# The SDK protocol's optional methods, as its ``_store_implements`` probes them.
OPTIONAL_METHODS = ("list_sessions", "list_session_summaries", "delete", "list_subkeys")


class Wrapper:
    """A store over another store, ``backend``, presenting what the backend has (see the module docstring).

    ``rewrites_loads``: whether ``load`` returns something other than the backend's stored copy (the layers'
    rewrite does), so that whatever must read or fill the stored copy (`import_transcript`) goes beneath it.
    """

    backend: Any
    rewrites_loads: ClassVar[bool] = False


class Forward(Generic[P, R]):
    """A method that is the backend's method of the same name: ``acquire_lease = Forward(SessionLeases.acquire_lease)``.

    The argument only gives the type (the protocol's signature); the name is the attribute's. Reading the
    attribute on a wrapper gives the backend's own bound method, so a call reaches it unchanged.
    """

    name: str

    def __init__(self, declared: Callable[Concatenate[Any, P], R] | None = None) -> None:
        self.name = getattr(declared, "__name__", "")

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Forward[P, R]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> Callable[P, R]: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> Forward[P, R] | Callable[P, R]:
        if obj is None:
            return self  # on the class: the SDK's probe compares this with the protocol's default
        method: Callable[P, R] = getattr(cast("Wrapper", obj).backend, self.name)
        return method


class ForwardValue(Generic[T]):
    """An attribute (a property) that is the backend's attribute of the same name: ``where``."""

    name: str

    def __init__(self, declared: Callable[[Any], T] | None = None) -> None:
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> ForwardValue[T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> ForwardValue[T] | T:
        if obj is None:
            return self
        value: T = getattr(cast("Wrapper", obj).backend, self.name)
        return value


# --- the SDK's optional methods, and ``projects`` (one mixin each: a backend may have any of them) ----------


class ListSessionsThrough:
    list_sessions: Forward[[str], Coroutine[Any, Any, list[SessionStoreListEntry]]] = Forward()


class ListSessionSummariesThrough:
    list_session_summaries: Forward[[str], Coroutine[Any, Any, list[SessionSummaryEntry]]] = Forward()


class DeleteThrough:
    delete: Forward[[SessionKey], Coroutine[Any, Any, None]] = Forward()


class ListSubkeysThrough:
    list_subkeys: Forward[[SessionListSubkeysKey], Coroutine[Any, Any, list[str]]] = Forward()


class ProjectsThrough:
    projects: Forward[[], list[str]] = Forward()


_SDK_MIXINS: dict[str, type] = {
    "list_sessions": ListSessionsThrough,
    "list_session_summaries": ListSessionSummariesThrough,
    "delete": DeleteThrough,
    "list_subkeys": ListSubkeysThrough,
}
# Every one of them: what a wrapper over one of our own stores has.
ALL_SDK_MIXINS: tuple[type, ...] = (*_SDK_MIXINS.values(), ProjectsThrough)


class SdkMethodsThrough(
    ListSessionsThrough, ListSessionSummariesThrough, DeleteThrough, ListSubkeysThrough, ProjectsThrough
):
    """All of them at once: what a type checker is told a wrapper may have (each is there only if the backend has it)."""


def implements(store: object, method: str) -> bool:
    """The SDK's own test for an optional method: present, and not the protocol's ``NotImplementedError`` default."""
    if getattr(store, method, None) is None:
        return False
    from claude_agent_sdk import SessionStore  # at call time: the SDK is slow to import and only this needs it

    return getattr(type(store), method, None) is not getattr(SessionStore, method, None)


def sdk_mixins(store: object) -> tuple[type, ...]:
    """The mixins for what ``store`` has of the SDK's optional methods (probed as the SDK probes) and ``projects``."""
    found = [mixin for name, mixin in _SDK_MIXINS.items() if implements(store, name)]
    if callable(getattr(store, "projects", None)):
        found.append(ProjectsThrough)
    return tuple(found)


def forwarded(mixin: type) -> tuple[str, ...]:
    """The names a mixin passes through."""
    return tuple(name for name, value in vars(mixin).items() if isinstance(value, (Forward, ForwardValue)))


def has_all(store: object, mixin: type) -> bool:
    """Whether ``store`` has every method ``mixin`` passes through (a group is passed through whole or not at all)."""
    return all(callable(getattr(store, name, None)) for name in forwarded(mixin))


def variant(cls: type[W], mixins: Sequence[type]) -> type[W]:
    """``cls`` with ``mixins``: the class a wrapper instance over a backend with those capabilities is made of."""
    base: type = cls
    return cast("type[W]", _variant(base, tuple(mixins)))  # a subclass of cls (or cls itself)


@functools.cache
def _variant(cls: type, mixins: tuple[type, ...]) -> type:
    if not mixins:
        return cls
    # Same name and module as the public class, so reprs and error messages read naturally.
    return type(cls.__name__, (cls, *mixins), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
