"""Typed errors of the platform.  Raised where the fault is found; the CLI turns them into
one-line messages with exit status 2.  Each message names the field or the rule id."""


class NardyError(Exception):
    """Base of every error the CLI reports as a one-line message."""


class UnknownVariant(NardyError):
    """A variant id that is not in the registry."""


class UnknownOption(NardyError):
    """A rule option (flag) that is unknown, of the wrong type, or for another family."""


class InvalidPosition(NardyError):
    """A position that breaks the format or the rules (checker counts, bar in long nardy, ...)."""


class InvalidDice(NardyError):
    """Dice outside 1-6, or not two of them."""


class IllegalPlay(NardyError):
    """A play that is not one of the legal afterstates of the position and roll."""


class UnknownAgent(NardyError):
    """An agent spec that names no known agent."""


class FormatError(NardyError):
    """Malformed input text: JSON, notation, gnubg Position ID, XGID."""


class EngineError(NardyError):
    """An external engine process (``ext:`` agent) that died, went silent or broke the protocol."""


class IllegalCubeAction(NardyError):
    """A cube or dave action the stakes rules do not allow (CUBE-1, CUBE-D, BG-B, BG-M); the
    message names the rule id."""
