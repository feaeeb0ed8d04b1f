"""flower-env: find credentials for Claude Agent SDK apps, check them, and store them.

``load_dotenv()`` fills ``os.environ`` from six sources with per-key precedence (process environment >
``$FLOWER_ENV`` > ``./.env`` > ``~/.config/flower/.env`` > a source checkout's ``.env`` > Claude Code's
settings), using python-dotenv's parser. Nothing here imports the SDK.
"""

from ._check import Setting, check_credentials, describe, mask, settings
from ._keys import DEFAULT_BASE_URL, KNOWN_KEYS, REQUIRED_ANY
from ._load import load_dotenv, load_notes, source_of
from ._paths import user_env_path
from ._probe import DEFAULT_PROBE_MODEL, ProbeResult, Verdict, probe_credentials
from ._probed import probe_fingerprint, probed_path, probed_today, remember_probe
from ._write import EnvFileError, setup_values, write_user_env

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_PROBE_MODEL",
    "KNOWN_KEYS",
    "REQUIRED_ANY",
    "EnvFileError",
    "ProbeResult",
    "Setting",
    "Verdict",
    "__version__",
    "check_credentials",
    "describe",
    "load_dotenv",
    "load_notes",
    "mask",
    "probe_credentials",
    "probe_fingerprint",
    "probed_path",
    "probed_today",
    "remember_probe",
    "settings",
    "setup_values",
    "source_of",
    "user_env_path",
    "write_user_env",
]
