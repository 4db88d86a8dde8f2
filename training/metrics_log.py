"""A run folder's record of what happened: ``metrics.jsonl`` and TensorBoard events.

Every long job that trains something (``nardy train`` with a TD, search-targets or
distillation recipe) writes the same two things into its
folder, through this one class:

* ``metrics.jsonl``: one JSON object a line, appended and never rewritten here (a resume
  trims it with :func:`nardy_ai.files.write_atomic`); NaN and infinities are refused, so
  every line parses with any JSON reader.
* ``tb/``: TensorBoard scalars, tag ``<kind>/<name>``, at a step the caller chooses (games
  for TD, generations for search targets, rounds or epochs for distillation).
"""

from __future__ import annotations

import json
import math
import os


def _plottable(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class MetricsLog:
    """Append-only ``FOLDER/metrics.jsonl`` plus TensorBoard under ``FOLDER/tb``.

    ``tensorboard=False`` writes the JSONL only; ``purge_step`` (on a resume) makes
    TensorBoard drop the events a killed session logged from that step on."""

    def __init__(self, folder: str, tensorboard: bool = True, purge_step: int | None = None):
        os.makedirs(folder, exist_ok=True)
        self.path = os.path.join(folder, "metrics.jsonl")
        self.writer = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter     # a core dependency
            self.writer = SummaryWriter(os.path.join(folder, "tb"), purge_step=purge_step)

    def line(self, record: dict) -> None:
        """Append one JSON line (ValueError on NaN or an infinity: the file stays valid JSON)."""
        text = json.dumps(record, allow_nan=False)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(text + "\n")

    def scalars(self, kind: str, values: dict, step: int, /) -> None:
        """The finite numbers of ``values`` to TensorBoard as ``kind/name`` at ``step``
        (strings, booleans, NaN are left to the JSONL)."""
        if self.writer is None:
            return
        for k, v in values.items():
            if _plottable(v):
                self.writer.add_scalar(f"{kind}/{k}", v, step)

    def record(self, kind: str, step: int, values: dict, /, **fields) -> None:
        """Both at once: ``{**fields, **values}`` as a JSON line, ``values`` as scalars
        (``fields`` may hold ``kind`` and ``step`` too: the first three are positional)."""
        self.line({**fields, **values})
        self.scalars(kind, values, step)

    def flush(self) -> None:
        if self.writer is not None:
            self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()

    def __enter__(self) -> "MetricsLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
