"""Plain helpers every layer of flower-cli uses: atomic files and locks, markdown sections, exit codes, lazy exports.

Private to flower-cli: nothing here is API, and nothing here imports the rest of the package.
"""

__all__: list[str] = []
