"""The version of flower-cli, in one place below every layer (hatch reads it here when it builds the wheel)."""

__version__ = "0.1.0"
