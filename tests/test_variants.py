"""Variants as data (nardy_ai/variants.py): the registry, rule options and their validation."""

import pytest

from nardy_ai.board import start_board
from nardy_ai.errors import UnknownOption, UnknownVariant
from nardy_ai.variants import VARIANTS, get_variant, parse_variant_spec, with_options


def test_registry_holds_the_five_variants_with_versions():
    assert set(VARIANTS) == {"backgammon", "short_caucasian", "short_trictrac", "long", "long_dave"}
    for v in VARIANTS.values():
        assert v.version and isinstance(v.version, str)
        assert sum(c for c in v.start if c > 0) == 15 and -sum(c for c in v.start if c < 0) == 15


def test_scoring_levels_per_rule():
    """BG-6 (1/2/3), BG-TT (1/2/4/8), LN-7 (1/2), LN-8 (the stake only)."""
    assert get_variant("backgammon").scoring == (1, 2, 3)
    assert get_variant("short_caucasian").scoring == (1, 2, 3)
    assert get_variant("short_trictrac").scoring == (1, 2, 4, 8)
    assert get_variant("long").scoring == (1, 2)
    assert get_variant("long_dave").scoring == (1,)


def test_stakes_per_variant():
    """CUBE-1: backgammon-family money play uses the cube; CUBE-D: long_dave uses dave."""
    assert get_variant("backgammon").stakes == "cube"
    assert get_variant("long_dave").stakes == "dave"
    assert with_options("long", stakes="dave").stakes == "dave"


def test_rule_flags_of_the_families():
    """BG-HH only in short_caucasian; LN-2..LN-5 (no hitting, head, six-block) in long nardy."""
    assert get_variant("short_caucasian").no_hit_and_hide
    assert not get_variant("backgammon").no_hit_and_hide
    for name in ("long", "long_dave"):
        v = get_variant(name)
        assert v.is_long and not v.hitting and v.head_rule and v.six_block_rule
    assert get_variant("backgammon").hitting and not get_variant("backgammon").head_rule


def test_unknown_variant_is_refused():
    with pytest.raises(UnknownVariant, match="unknown variant 'chess'"):
        get_variant("chess")


def test_backgammon_options_exist():
    """BG-J (Jacoby), BG-M (automatic doubles with a cap), BG-B (beaver) are flags of the
    backgammon family."""
    v = with_options("backgammon", jacoby=True, murphy_cap=2, beaver=True)
    assert v.jacoby and v.murphy_cap == 2 and v.beaver
    assert v.id == "backgammon"


def test_koks_option_of_long_nardy():
    """LN-7: koks is a setting of long nardy (off by default) and adds a third level."""
    assert not get_variant("long").koks
    assert with_options("long", koks=True).scoring == (1, 2, 3)


@pytest.mark.parametrize("variant, options, match", [
    ("backgammon", {"stakes": "doubling"}, "stakes"),
    ("backgammon", {"jacoby": "yes"}, "BG-J"),                   # wrong type
    ("backgammon", {"murphy_cap": -1}, "BG-M"),
    ("backgammon", {"murphy_cap": True}, "BG-M"),
    ("long", {"beaver": True}, "BG-B"),                          # wrong family
    ("backgammon", {"crawford": True}, "unknown rule option 'crawford'"),
    ("backgammon", {"koks": True}, "LN-7"),
    ("long_dave", {"koks": True}, "LN-8"),
], ids=lambda x: ",".join(f"{k}={v}" for k, v in x.items()) if isinstance(x, dict) else None)
def test_wrong_rule_options_are_refused_naming_the_rule(variant, options, match):
    with pytest.raises(UnknownOption, match=match):
        with_options(variant, **options)


def test_variant_spec_strings():
    v = parse_variant_spec("backgammon,jacoby=true,murphy_cap=3")
    assert v.jacoby and v.murphy_cap == 3
    assert parse_variant_spec("long").id == "long"


@pytest.mark.parametrize("spec, match", [
    ("backgammon,jacoby", "name=value"),
    ("backgammon,jacoby=maybe", "BG-J"),
])
def test_malformed_variant_spec_strings_are_refused(spec, match):
    with pytest.raises(UnknownOption, match=match):
        parse_variant_spec(spec)


def test_start_positions_match_rules():
    """BG-1 and LN-1 start positions, as POSITIONS.md lists them."""
    assert start_board("backgammon")[:24].tolist() == [
        -2, 0, 0, 0, 0, 5, 0, 3, 0, 0, 0, -5, 5, 0, 0, 0, -3, 0, -5, 0, 0, 0, 0, 2]
    assert start_board("long")[:24].tolist() == [0] * 11 + [-15] + [0] * 11 + [15]


def test_the_variants_command_lists_each_variants_rule_options(capsys):
    """``nardy variants``: every variant with its rules version, and under it each rule option
    that applies to its family with the option's type and the variant's default."""
    from nardy_ai.cli import main
    from nardy_ai.variants import OPTIONS
    assert main(["variants"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for v in VARIANTS.values():
        at = next(i for i, x in enumerate(lines) if x.startswith(f"{v.id} v{v.version} "))
        block = []
        for x in lines[at + 1:]:
            if not x.startswith("  "):
                break
            block.append(x.split())
        assert [row[0] for row in block] == [n for n, (_, fam, _) in OPTIONS.items() if v.family in fam]
        for row in block:
            default = getattr(v, row[0])
            assert row[row.index("default") + 1] == (str(default).lower() if isinstance(default, bool)
                                                     else str(default))
            kind = OPTIONS[row[0]][0]
            assert kind.__name__ in row or (kind is str and "|" in row)
    # The option defaults follow the variant: backgammon plays for the cube, long_dave for dave.
    stakes = {v: next(x for x in lines[i:] if x.split()[:1] == ["stakes"]).split()
              for i, x in enumerate(lines) for v in ("backgammon", "long_dave") if x.startswith(v + " ")}
    assert "cube" == stakes["backgammon"][stakes["backgammon"].index("default") + 1]
    assert "dave" == stakes["long_dave"][stakes["long_dave"].index("default") + 1]
