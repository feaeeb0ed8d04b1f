"""flower-cli: the flower Runtime, roles and workflows, and the ``flower`` command.

Names are imported on first use, so ``flower --help`` does not pay for the SDK's import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._shared.lazy import lazy_surface
from ._shared.version import __version__ as __version__

if TYPE_CHECKING:
    from .control import Control as Control
    from .control import ControlError as ControlError
    from .control import RunInfo as RunInfo
    from .control import RunPublisher as RunPublisher
    from .go import AsideAnswer as AsideAnswer
    from .go import Brief as Brief
    from .go import Goal as Goal
    from .go import GoFlow as GoFlow
    from .go import GoSettings as GoSettings
    from .go import HumanChannel as HumanChannel
    from .go import NotesPaths as NotesPaths
    from .go import Verdict as Verdict
    from .go import WakeState as WakeState
    from .go import answer_aside as answer_aside
    from .go import archive_for_new as archive_for_new
    from .go import aside_context as aside_context
    from .go import build_go_flow as build_go_flow
    from .go import go_workbench as go_workbench
    from .go import progress_line as progress_line
    from .go import route_eof as route_eof
    from .go import route_json as route_json
    from .go import route_line as route_line
    from .go import wake_banner as wake_banner
    from .go import wake_state as wake_state
    from .roles import BRIEF_SECTIONS as BRIEF_SECTIONS
    from .roles import CLARIFIER_RULES as CLARIFIER_RULES
    from .roles import COORDINATOR_RULES as COORDINATOR_RULES
    from .roles import GOAL_SECTIONS as GOAL_SECTIONS
    from .roles import JUDGE_RULES as JUDGE_RULES
    from .roles import ORACLE_RULES as ORACLE_RULES
    from .roles import UNVERIFIABLE_MARK as UNVERIFIABLE_MARK
    from .roles import VERDICT_SECTIONS as VERDICT_SECTIONS
    from .roles import VERDICT_STATES as VERDICT_STATES
    from .roles import WORKER_RULES as WORKER_RULES
    from .roles import clarify as clarify
    from .roles import coordinator as coordinator
    from .roles import judge as judge
    from .roles import oracle as oracle
    from .roles import worker as worker
    from .runtime import BUDGET_SPENT as BUDGET_SPENT
    from .runtime import HARNESS_SCHEDULERS as HARNESS_SCHEDULERS
    from .runtime import PLUGIN_DIR as PLUGIN_DIR
    from .runtime import AgentSpec as AgentSpec
    from .runtime import Channel as Channel
    from .runtime import CompactPolicy as CompactPolicy
    from .runtime import CredentialsError as CredentialsError
    from .runtime import Event as Event
    from .runtime import Handoff as Handoff
    from .runtime import HandoffPolicy as HandoffPolicy
    from .runtime import IsolatedAgentDefinition as IsolatedAgentDefinition
    from .runtime import IsolationError as IsolationError
    from .runtime import Lineage as Lineage
    from .runtime import Manifest as Manifest
    from .runtime import RunBudget as RunBudget
    from .runtime import Runtime as Runtime
    from .runtime import SessionBusy as SessionBusy
    from .runtime import StepResult as StepResult
    from .runtime import Workers as Workers
    from .runtime import build_options as build_options
    from .runtime import delegate_guard as delegate_guard
    from .runtime import is_overflow as is_overflow
    from .runtime import isolate_guard as isolate_guard
    from .runtime import main_thread_guard as main_thread_guard
    from .runtime import merge_hooks as merge_hooks
    from .runtime import normalize as normalize
    from .runtime import record_overflow as record_overflow
    from .runtime import resolve_window as resolve_window
    from .runtime import whitelist_guard as whitelist_guard
    from .ui import RunSource as RunSource
    from .ui import SourceError as SourceError
    from .ui import SourceOptions as SourceOptions
    from .workflow import RunContext as RunContext
    from .workflow import RunResult as RunResult
    from .workflow import Step as Step
    from .workflow import StepAbort as StepAbort
    from .workflow import StepRunner as StepRunner
    from .workflow import Workflow as Workflow
    from .workflow import WorkflowError as WorkflowError

__all__ = lazy_surface(__name__)
