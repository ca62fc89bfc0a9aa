"""Exceptions that carry a message a user can act on (the CLI prints them without a traceback)."""


class WavescatError(Exception):
    """Base class of every error wavescat raises on purpose."""


class ConfigError(WavescatError):
    """The configuration is invalid; the message names the key and the value. Raised by the
    config layer only (configuration/, the commands that read config files): the one that
    knows where a value came from."""


class InputError(WavescatError, ValueError):
    """A routine was given input outside what it accepts (a parameter out of range, a file
    it cannot use); the message names the parameter or file, never a config key. The config
    layer checks a case before any routine runs, and says which key an InputError's value
    came from where it passes one on."""


class MeshError(WavescatError):
    """A mesh is unreadable, empty, open, non-manifold, degenerate or badly oriented."""


class BackendError(WavescatError):
    """The requested compute backend is not available (e.g. `gpu` without a visible GPU)."""


class SolverError(WavescatError):
    """A solver did not converge or was given inconsistent input."""


class ResourceError(WavescatError):
    """A job needs more memory (host or GPU) than the machine has; the message says how much."""
