"""The implementations behind each ``flower`` subcommand (imported only when that command runs)."""
