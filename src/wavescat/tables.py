"""The far-field table of the contract (shared/CONTRACT.md), importable from here too; its
home, with every other result file of a case, is `solve.records`."""
from .files import atomic_path  # noqa: F401
from .solve.records import FARFIELD_HEADER, read_farfield_csv  # noqa: F401
