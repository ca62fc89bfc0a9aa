"""The far-field table of the contract (docs/conventions.md), importable from here too; its
home, with every other result file of a case, is `solve.records`."""
from .files import atomic_path  # noqa: F401  (kept importable from here)
from .solve.records import FARFIELD_HEADER, read_farfield_csv  # noqa: F401
