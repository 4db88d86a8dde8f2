"""Bad input (issue #14): every bad input a one-line `nardy: error: ...` naming the field or the
rule, exit status 2, no traceback and nothing written before the checks; the long-lived
processes (`nardy serve`, `nardy moves`) answer any line and go on.  Fuzz tests (hypothesis)
throw generated garbage at the position parser, the agent protocol and the config loader and
accept only a NardyError.  Crashes, locks and resumes are in test_crash_recovery.py."""

import json
import os
import tempfile
from contextlib import suppress

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nardy_ai import formats
from nardy_ai.agents import HeuristicAgent
from nardy_ai.board import (MAX_JSON_DEPTH, board_from_json, board_to_json, json_object, numbered_lines,
                            parse_json, start_board)
from nardy_ai.errors import FormatError, InvalidPosition, NardyError
from nardy_ai.protocol import OPS, Server
from nardy_ai.variants import parse_variant_spec
from training.config import ConfigError, config_from_dict, load_config
from cli_helpers import assert_one_line_error, main_error, nardy

START = board_to_json(start_board("backgammon"), "backgammon")
LONG = board_to_json(start_board("long"), "long")
DEEP = "[" * 2000 + "]" * 2000


# --- 1. deeply nested JSON ------------------------------------------------------------------

@pytest.mark.parametrize("text", [DEEP, '{"a": ' * 2000 + "1" + "}" * 2000, "[" * 5000,
                                  json.dumps(dict(START, dice=[3, 1])).replace("[3, 1]", "[" * 900 + "]" * 900)])
def test_deeply_nested_json_is_a_format_error(text):
    for read in (parse_json, lambda t: json_object(t, "x"), lambda t: board_from_json(t, "backgammon")):
        with pytest.raises(FormatError, match="nested|malformed"):
            read(text)


def test_nesting_up_to_the_limit_is_read_and_brackets_in_strings_do_not_count():
    assert parse_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is not None
    text = json.dumps({"s": "[" * 5000, "t": "{" * 5000})
    assert parse_json(text)["s"] == "[" * 5000


def test_moves_and_show_refuse_deep_json_and_moves_answers_the_lines_after_it():
    ok = json.dumps(dict(START, dice=[3, 1]))
    proc = nardy("moves", stdin=f"{DEEP}\n{ok}\n")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    out = [json.loads(x) for x in proc.stdout.splitlines()]
    assert len(out) == 2 and "nested" in out[0]["error"] and len(out[1]["afterstates"]) == 16
    assert_one_line_error(nardy("show", "-", stdin=DEEP), "nested")


# --- `nardy serve` survives any line ------------------------------------------------------

NASTY = [
    DEEP.encode(),
    b'{"op": "play", "batch": ' + DEEP.encode() + b"}",
    b"\xff\xfe\x00 not utf-8 \xc3\x28",
    b'{"op": "info", "id": NaN}',
    b'{"id": Infinity, "op": "info"}',
    b"1" * 5000,
    b'{"op": "play", "points": [1e400], "dice": [1, 2]}',
    b"\x00\x01\x02",
    json.dumps(dict(START, op="double", cube={"value": 2 ** 70})).encode(),
    json.dumps(dict(START, op="take", cube={"value": 3})).encode(),
    json.dumps({"op": "play", "batch": [{}, [], "x", None, dict(START, dice=[9, 9])]}).encode(),
    json.dumps({"op": ["play"], "id": {"a": [1]}}).encode(),
    json.dumps({"op": "play", "batch": {"a": 1}}).encode(),
    b'"just a string"',
    b"[]",
    b"{" * 30,
]


def test_serve_answers_any_line_and_keeps_serving():
    """Each nasty line gets one error answer naming its line number; the info request after it
    is answered; every answer line is strict JSON (no bare NaN or Infinity)."""
    lines = []
    for i, bad in enumerate(NASTY):
        lines += [bad, json.dumps({"op": "info", "id": i}).encode()]
    proc = nardy("serve", "--agent", "heuristic", stdin=b"\n".join(lines) + b"\n")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    out = [parse_json(x) for x in proc.stdout.splitlines()]
    assert len(out) == 2 * len(NASTY)
    for i in range(len(NASTY)):
        assert out[2 * i].get("error", "").startswith(f"line {2 * i + 1}: "), (NASTY[i][:80], out[2 * i])
        assert out[2 * i + 1] == dict(out[2 * i + 1], id=i, name="heuristic")
    assert out[8]["id"] is None                        # an Infinity id is not echoed (not JSON)


def test_a_line_too_long_to_read_is_skipped_with_bounded_memory():
    import io
    text = "ab\n" + "x" * 100 + "\ncd\n" + "y" * 50
    assert list(numbered_lines(io.StringIO(text), max_chars=10)) == [(1, "ab\n"), (2, None), (3, "cd\n"), (4, None)]
    server = Server(HeuristicAgent(), "backgammon")
    assert "line 2: " in json.loads(server.answer_line(None, 2))["error"]


# --- fuzz: garbage at the position parser, the protocol and the config loader ----------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)
FIELDS = ["variant", "points", "bar", "off", "dice", "cube", "op", "batch", "id"]
positions = (
    json_values
    | st.tuples(st.sampled_from(FIELDS), json_values).map(lambda kv: {**START, "dice": [3, 1], kv[0]: kv[1]})
    | st.lists(st.integers(-20, 20) | st.integers(), min_size=24, max_size=24).map(lambda p: {**START, "points": p})
    | st.dictionaries(st.sampled_from(["value", "owner"]), json_values | st.integers() | st.sampled_from(
        ["centre", "mover", "opponent"])).map(lambda c: {**START, "cube": c})
    | st.tuples(st.integers(-3, 9), st.integers(-3, 9)).map(lambda d: {**START, "dice": list(d)}))
texts = (positions.map(lambda o: json.dumps(o)) | st.text(max_size=60)
         | st.binary(max_size=60).map(lambda b: b.decode("utf-8", "surrogateescape")))
FUZZ = settings(max_examples=300, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@FUZZ
@given(obj=positions | texts, variant=st.sampled_from(["backgammon", "long", "long_dave,dave_progression=arithmetic"]))
def test_fuzz_position_parser_raises_only_nardy_errors(obj, variant):
    with suppress(NardyError):
        board_from_json(obj, parse_variant_spec(variant))


@FUZZ
@given(text=st.text(max_size=40) | st.text(alphabet="-abcdefghijklmnopABCDEFGHIJKLMNOP0123456789:XGID=D",
                                               max_size=70))
def test_fuzz_position_id_and_xgid_raise_only_nardy_errors(text):
    for read in (formats.board_from_position_id, formats.board_from_xgid):
        with suppress(NardyError):
            read(text, "backgammon")


@FUZZ
@given(req=texts | st.tuples(st.sampled_from(OPS) | json_values, positions).map(
    lambda t: json.dumps({**t[1], "op": t[0]} if isinstance(t[1], dict) else {"op": t[0], "batch": [t[1]]})))
def test_fuzz_protocol_answers_every_line_with_strict_json(req):
    answer = parse_json(Server(HeuristicAgent(), "backgammon").answer_line(req, 1))
    assert isinstance(answer, dict) and "id" in answer


_KEYS = ["variant", "seed", "name", "model", "td", "selfplay", "run", "ray", "encoder", "hidden", "activation",
         "init_from", "classes", "lambda", "optimizer", "learning_rate", "batch_size", "update_games", "epochs",
         "loss", "parallel_games", "total_games", "epsilon", "temperature", "checkpoint_every", "eval_every",
         "eval_games", "eval_opponents", "log_every", "threads", "device", "actors", "weights_every", "junk"]
config_values = st.recursive(json_values, lambda inner: st.dictionaries(st.sampled_from(_KEYS), inner, max_size=5),
                             max_leaves=15)


@FUZZ
@given(data=st.dictionaries(st.sampled_from(_KEYS), config_values, max_size=6))
def test_fuzz_config_schema_raises_only_config_errors(data):
    with suppress(ConfigError):
        config_from_dict(data)


@FUZZ
@given(raw=st.binary(max_size=80) | st.text(alphabet='[]=."\'#\n abcdefghijklmnoprstuvwxyz_0123456789-+e',
                                            max_size=120).map(str.encode))
def test_fuzz_config_files_raise_only_config_errors(raw):
    with tempfile.NamedTemporaryFile("wb", suffix=".toml", delete=False) as f:
        f.write(raw)
    try:
        with suppress(ConfigError):
            load_config(f.name)
    finally:
        os.unlink(f.name)


# --- 4. outputs are checked before the work starts -------------------------------------------

def test_play_refuses_an_unwritable_record_file_before_playing(tmp_path):
    for path in (tmp_path / "no" / "such" / "dir.jsonl", tmp_path):
        proc = nardy("play", "--variant", "backgammon", "--agents", "random", "random", "--games", "4",
                     "--jsonl", str(path))
        assert_one_line_error(proc, "cannot write", str(path))
        assert proc.stdout == ""                       # no games were played, nothing printed
    fine = tmp_path / "games.jsonl"
    fine.write_text("kept\n")
    assert nardy("play", "--variant", "backgammon", "--agents", "random", "nobody", "--games", "4",
                 "--jsonl", str(fine)).returncode == 2
    assert fine.read_text() == "kept\n"                # nothing already written is changed


# --- 6. tracebacks that were errors ---------------------------------------------------------

@pytest.mark.parametrize("args,words", [
    # what does not exist: a position's field, a variant or rule, an agent, a command
    (("show", '{"variant": "backgammon", "points": [0]}'), ["points"]),
    (("show", '{"variant": "shogi", "points": []}'), ["unknown variant", "shogi"]),
    (("show", "--gnubg-id", "@@@"), ["Position ID"]),
    (("play", "--variant", "backgammon", "--agents", "random", "gnubg9000"), ["gnubg9000"]),
    (("play", "--variant", "backgammon,jacobi=true", "--agents", "random", "random"), ["jacobi"]),
    (("play", "--variant", "nope", "--agents", "random", "random"), ["nope"]),
    (("moves", "--variant", "nope"), ["nope"]),
    (("frobnicate",), ["frobnicate"]),
    # option values out of range (each once a traceback)
    (("play", "--variant", "backgammon", "--agents", "random", "random", "--seed", "-1"), ["--seed"]),
    (("serve", "--agent", "random", "--seed", "-5"), ["--seed"]),
    (("bench", "movegen", "--batch-sizes", "abc"), ["--batch-sizes"]),
    (("bench", "movegen", "--batch-sizes", "0"), ["--batch-sizes"]),
    (("bench", "movegen", "--batch-sizes", "64,99999999999999999999999"), ["--batch-sizes"]),
    (("bench", "agents", "--hidden", "abc"), ["--hidden"]),
    (("bench", "movegen", "--repeats", "0"), ["--repeats"]),
    (("bench", "train", "--seconds", "nan"), ["--seconds"]),
    (("tournament", "--variant", "backgammon", "--games", "-4"), ["--games"]),
    (("tournament", "--variant", "backgammon", "--agents", "random", "heuristic", "--games", str(10 ** 12)),
     ["--games"]),
    (("show", "--xgid", "XGID=-b----E-C---eE---c-e----B-:" + "1" * 5000 + ":0:1"), ["cube value"]),
])
def test_bad_command_lines_are_one_line_errors(args, words):
    assert_one_line_error(nardy(*args), *words)


def test_bench_evaluators_refuses_a_binary_or_broken_position_set(tmp_path):
    binary = tmp_path / "set.jsonl"
    binary.write_bytes(bytes(range(128, 256)) * 4 + bytes(range(128)))
    assert_one_line_error(nardy("bench", "evaluators", "--positions", str(binary)), "line 1", "UTF-8")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"header": {"version": 1, "reference": "x"}}\n{"points": 3}\n')
    assert_one_line_error(nardy("bench", "evaluators", "--positions", str(broken)), "line 2", "points")


@pytest.mark.parametrize("toml,key", [
    ("seed = -1", "seed"),
    ("[run]\nthreads = -3", "run.threads"),
    ("[model]\nhidden = [1000000000000]", "model.hidden"),
    ("[selfplay]\nparallel_games = 1000000000000000", "selfplay.parallel_games"),
    ("[td]\nlearning_rate = inf", "td.learning_rate"),
    ("[selfplay]\ntemperature = inf", "selfplay.temperature"),
    ("[td]\nlambda = nan", "td.lambda"),
    ("[run]\neval_opponents = [\"nobody\"]", "run.eval_opponents"),
    ("[run]\neval_opponents = [\"pubeval\"]", "run.eval_opponents"),     # no pubeval for long nardy
])
def test_bad_training_configs_are_one_line_errors_and_write_nothing(tmp_path, capsys, toml, key):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(f'variant = "long"\n{toml}\n')
    out = tmp_path / "run"
    main_error(capsys, ["train", "--config", str(cfg), "--out", str(out), "--no-progress"], key)
    assert not out.exists()


def test_cuda_on_a_torch_without_cuda_is_a_config_error(tmp_path, capsys):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this torch has a CUDA device")
    cfg = tmp_path / "cuda.toml"
    cfg.write_text('variant = "long"\n[run]\ndevice = "cuda"\n')
    main_error(capsys, ["train", "--config", str(cfg), "--out", str(tmp_path / "run")], "run.device")
    assert not (tmp_path / "run").exists()


# --- 9. the smaller ones --------------------------------------------------------------------

def test_show_reads_json_that_is_no_object_as_json_and_refuses_two_positions():
    assert_one_line_error(nardy("show", "[1,2,3]"), "JSON object")
    assert_one_line_error(nardy("show", json.dumps(START), "--gnubg-id", "4HPwATDgc/ABMA"), "--gnubg-id")
    assert_one_line_error(nardy("show", "--gnubg-id", "4HPwATDgc/ABMA", "--xgid", "XGID=x"), "--xgid")
    assert_one_line_error(nardy("show", "/dev/zero"), "/dev/zero")


def test_svg_output_writes_into_a_pipe_and_through_a_link_never_replacing_them(tmp_path):
    import stat
    import threading
    fifo = tmp_path / "pipe.svg"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    proc = nardy("show", json.dumps(START), "--svg", str(fifo))
    reader.join(60)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and got and "<svg" in got[0]
    (tmp_path / "link.svg").symlink_to(tmp_path / "picture.svg")
    assert nardy("show", json.dumps(START), "--svg", str(tmp_path / "link.svg")).returncode == 0
    assert (tmp_path / "link.svg").is_symlink() and "<svg" in (tmp_path / "picture.svg").read_text()


def test_stream_errors_name_the_line():
    text = "\n".join([json.dumps(dict(START, dice=[3, 1])), "", "{oops", json.dumps(dict(START, dice=[0, 1]))])
    out = [json.loads(x) for x in nardy("moves", stdin=text + "\n").stdout.splitlines()]
    assert [a.get("error", "")[:8] for a in out] == ["", "line 3: ", "line 4: "]
    out = [json.loads(x) for x in nardy("serve", "--agent", "random", stdin=text + "\n").stdout.splitlines()]
    assert out[1]["error"].startswith("line 3: malformed JSON") and out[2]["error"].startswith("line 4: ")


def test_cube_values_must_be_reachable_by_the_stakes():
    """CUBE-1 and geometric CUBE-D double the stake: 3 never occurs; arithmetic dave reaches it."""
    three = dict(START, cube={"value": 3, "owner": "mover"})
    for spec in ("backgammon", "backgammon,stakes=dave"):
        with pytest.raises(InvalidPosition, match="cube.value = 3 .*CUBE"):
            board_from_json(three, parse_variant_spec(spec))
    assert board_from_json(three, parse_variant_spec("backgammon,stakes=dave,dave_progression=arithmetic"))[3] \
        == {"value": 3, "owner": "mover"}
    assert board_from_json(dict(START, cube={"value": 4}), "backgammon")[3]["value"] == 4
    with pytest.raises(InvalidPosition, match="cube.value"):
        board_from_json(dict(START, cube={"value": 2 ** 64}), "backgammon")


def test_non_finite_numbers_and_huge_integers_are_not_json():
    for text in ('{"id": Infinity}', '{"id": -Infinity}', '[NaN]', '[1e999]', "1" * 5000):
        with pytest.raises(FormatError, match="malformed JSON"):
            parse_json(text)
    with pytest.raises(FormatError, match="UTF-8"):
        parse_json(b"\xff\xfe")


def test_train_refuses_negative_games_and_an_unreachable_ray_cluster_before_writing(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text('variant = "long"\n')
    out = tmp_path / "run"
    train = ["train", "--config", str(cfg), "--out", str(out)]
    main_error(capsys, [*train, "--games", "-5"], "--games")
    main_error(capsys, [*train, "--games", "0"], "--games")
    main_error(capsys, [*train, "--backend", "ray", "--address", "127.0.0.1:1"], "127.0.0.1:1")
    main_error(capsys, ["tournament", "--variant", "backgammon", "--agents", "random", "heuristic", "--games", "2",
                        "--out", str(out), "--backend", "ray", "--address", "no-port"], "--address")
    assert not out.exists()


def test_an_early_interrupted_tournament_suggests_no_resume(tmp_path, monkeypatch, capsys):
    from nardy_ai import cli, tournament

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(tournament, "run_tournament", interrupted)
    out = tmp_path / "t"
    assert cli.main(["tournament", "--variant", "backgammon", "--agents", "random", "heuristic",
                     "--out", str(out)]) == 130
    err = capsys.readouterr().err
    assert "--resume" not in err and "nothing to resume" in err
    out.mkdir()
    (out / tournament.CONFIG_FILE).write_text("{}")
    assert cli.main(["tournament", "--variant", "backgammon", "--agents", "random", "heuristic",
                     "--out", str(out)]) == 130
    assert f"--out {out} --resume" in capsys.readouterr().err


def test_tables_name_agents_apart_and_list_every_spec_whole():
    from nardy_ai import tournament as tm
    long_ext = 'ext:"python -m some.engine --with --many --options --that --go --on"'
    specs = ["td:a/x/td80/checkpoint.pt", "td:b/x/td80/checkpoint.pt", long_ext]
    shown = tm.display_names(specs)
    assert shown[long_ext] == long_ext                                 # no width: never cut
    assert shown[specs[0]] != shown[specs[1]]                          # two nets stay apart
    assert tm.display_names(["td:checkpoints/backgammon/td80/checkpoint.pt"]) == {
        "td:checkpoints/backgammon/td80/checkpoint.pt": "td:td80/checkpoint.pt"}
    cut = tm.display_name(long_ext, 24)
    assert len(cut) == 24 and cut.startswith("ext:") and cut.endswith('on"')
    # In the printed summary a name longer than the table allows is cut, and the spec is
    # listed whole above the tables.
    summary = {"variant": "backgammon", "variant_version": "1", "options": {}, "mode": "round robin",
               "games_per_pairing": 2, "games": 2, "seed": 0, "result_levels": ["single"],
               "ranking": [{"agent": a, "rank": i, "elo": 0.0, "elo_ci95": [-1.0, 1.0], "games": 2,
                            "points_per_game": 0.0, "points_per_game_ci95": None, "win_rate": 0.5,
                            "win_rates_by_level": {}} for i, a in enumerate([long_ext, "random"], 1)],
               "pairings": [{"agents": [long_ext, "random"], "points_per_game_ci95": None}],
               "cross_table": {long_ext: {long_ext: None, "random": 0.0}, "random": {long_ext: 0.0, "random": None}}}
    text = tm.format_summary(summary)
    joined = " ".join(x.strip() for x in text.splitlines())           # wrapped lines joined
    assert f"{tm.display_name(long_ext, tm.NAME_WIDTH)} = {long_ext}" in joined
    assert max(len(x) for x in text.splitlines()) <= tm.SCREEN_WIDTH
