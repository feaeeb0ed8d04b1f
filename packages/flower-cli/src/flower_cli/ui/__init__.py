"""``flower ui``: one local page showing the runs live — their steps, context, tools, workers, questions and cost —
with the answer box, the mail box and the stop button doing what ``flower answer`` / ``mail`` / ``stop`` do.

A Starlette application (`create_app`) behind a random token (`TokenGate`), served by uvicorn; the runs come from
`RunSource`s (this workspace's through `Control`, the fleet's through the ``flower_cli.ui_sources`` entry point).
Needs the ``ui`` extra: ``pip install 'flower-cli[ui]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._shared.lazy import lazy_surface

if TYPE_CHECKING:
    from ._app import STATIC_DIR as STATIC_DIR
    from ._app import create_app as create_app
    from ._local import ControlSource as ControlSource
    from ._serve import Closing as Closing
    from ._serve import is_loopback as is_loopback
    from ._serve import listen as listen
    from ._serve import page_url as page_url
    from ._serve import serve as serve
    from ._sources import UI_SOURCES_GROUP as UI_SOURCES_GROUP
    from ._sources import RunSource as RunSource
    from ._sources import SourceError as SourceError
    from ._sources import SourceOptions as SourceOptions
    from ._sources import installed_sources as installed_sources
    from ._sse import SseResponse as SseResponse
    from ._sse import sse_message as sse_message
    from ._token import TokenGate as TokenGate
    from ._token import new_token as new_token

__all__ = lazy_surface(__name__)
