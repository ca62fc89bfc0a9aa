"""Exceptions that carry a message a user can act on (the CLI prints them without a traceback)."""


class WavescatError(Exception):
    """Base class of every error wavescat raises on purpose."""


class ConfigError(WavescatError):
    """The configuration is invalid; the message names the key and the value."""


class MeshError(WavescatError):
    """A mesh is unreadable, empty, open, non-manifold, degenerate or badly oriented."""


class BackendError(WavescatError):
    """The requested compute backend is not available (e.g. `gpu` without a visible GPU)."""


class SolverError(WavescatError):
    """A solver did not converge or was given inconsistent input."""


class ResourceError(WavescatError):
    """A job needs more memory (host or GPU) than the machine has; the message says how much."""
