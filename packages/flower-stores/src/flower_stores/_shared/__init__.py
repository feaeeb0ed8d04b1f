"""Plain helpers every room of flower-stores uses: the error type, JSON text for a database, the usage sum, and
the passthrough that lets a wrapper present exactly its backend's methods.

Private to flower-stores: nothing here is API (`StoreError` is exported by the package itself), and nothing here
imports the rest of the package. Import the modules directly (``from .._shared.errors import StoreError``).
"""

__all__: list[str] = []
