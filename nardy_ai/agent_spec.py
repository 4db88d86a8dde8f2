"""The modifiers an agent spec may end in, in one place: ``BASE[@Nply][+pipcube|+cubeMply][+cubefulplay]``.

``BASE`` is a checkpoint path (``td:PATH...``) or a registry name (``bg-champion@1ply``); the
modifiers set the depth of the checker play's search (``@Nply``), how the agent decides its
cube or dave actions (``+pipcube``: the pip-count rule; ``+cubeMply``: its own net searched M
plies deep), and whether checker play in a game with stakes ranks plays by cubeful equity
(``+cubefulplay``).  The neural agent's factory, the registry's name resolution and the
tournament's short names all read specs with :func:`split_spec`, so the grammar cannot drift
between them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_GRAMMAR = re.compile(r"^(?P<base>.+?)(?P<suffix>(?:@(?P<plies>\d+)ply)?"
                      r"(?:\+(?P<cube>pipcube|cube(?P<cube_plies>\d+)ply))?"
                      r"(?P<cubeful>\+cubefulplay)?)$")


@dataclass(frozen=True)
class SpecModifiers:
    """The modifiers of one spec.  ``plies``: ``@Nply``'s N, None when absent; ``cube``:
    ``"pip"`` for ``+pipcube``, M for ``+cubeMply``, None when absent; ``cubeful_play``:
    ``+cubefulplay`` given; ``suffix``: the modifiers exactly as written (``"@1ply+cube0ply"``)."""

    plies: int | None = None
    cube: str | int | None = None
    cubeful_play: bool = False
    suffix: str = ""


def split_spec(spec: str) -> tuple[str, SpecModifiers]:
    """``"bg-champion@1ply+pipcube"`` -> ``("bg-champion", SpecModifiers(1, "pip", False,
    "@1ply+pipcube"))``.  The base is whatever precedes the modifiers (a path may itself hold
    ``@`` or ``+``: only a trailing run of well-formed modifiers is taken).  An empty spec gives
    ``("", SpecModifiers())``."""
    m = _GRAMMAR.match(spec)
    if m is None:
        return spec, SpecModifiers()
    cube: str | int | None = None
    if m["cube"] == "pipcube":
        cube = "pip"
    elif m["cube_plies"] is not None:
        cube = int(m["cube_plies"])
    return m["base"], SpecModifiers(plies=int(m["plies"]) if m["plies"] is not None else None, cube=cube,
                                    cubeful_play=m["cubeful"] is not None, suffix=m["suffix"])
