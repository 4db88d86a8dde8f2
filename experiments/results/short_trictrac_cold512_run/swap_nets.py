"""The class-swap nets of the trictrac cold round's ablation (which net bought what).

    python experiments/results/short_trictrac_cold512_run/swap_nets.py RUN/current.pt OUT_DIR

Writes four checkpoints into OUT_DIR, each a net set whose members are copied whole from
others: ``parent.pt`` (bg-champion adopted into BG-TT's seven outputs, the round's teacher),
``parent_coldrace.pt`` (the parent with the round's race net), ``cold_cc_parent_race.pt`` (the
round's contact and crashed nets with the parent's race net) and ``champ_coldrace.pt``
(trictrac-distill2 with the round's race net).  Then, on shared dice:

    nardy tournament --variant short_trictrac --agents td:OUT/parent.pt td:RUN/current.pt \\
        td:OUT/parent_coldrace.pt td:OUT/cold_cc_parent_race.pt td:OUT/champ_coldrace.pt \\
        trictrac-distill2 --gauntlet --dice shared --games 10000 --seed 54 --jobs 2
"""

import copy
import os
import sys

import torch

from nardy_ai import registry
from nardy_ai.model import load_checkpoint
from nardy_ai.netset import adopt_state


def main(student_path: str, out: str) -> None:
    student = load_checkpoint(student_path)
    parent = adopt_state(load_checkpoint(registry.entry("bg-champion").path)["evaluator"], "short_trictrac")
    distill2 = load_checkpoint(registry.entry("trictrac-distill2").path)["evaluator"]
    os.makedirs(out, exist_ok=True)

    def save(base: dict, donor: dict, classes: list[str], name: str) -> None:
        ev = copy.deepcopy(base)
        for c in classes:
            ev["members"][c] = copy.deepcopy(donor["members"][c])
        torch.save(dict(student, evaluator=ev), os.path.join(out, name))

    save(parent, student["evaluator"], [], "parent.pt")
    save(parent, student["evaluator"], ["race"], "parent_coldrace.pt")
    save(parent, student["evaluator"], ["contact", "crashed"], "cold_cc_parent_race.pt")
    save(distill2, student["evaluator"], ["race"], "champ_coldrace.pt")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
