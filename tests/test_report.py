"""``nardy report`` (nardy_ai/report.py): one self-contained HTML page for a tournament folder or a
training run folder; every figure is inline SVG that parses, and, where a Chromium is installed,
draws in a real browser."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.dom.minidom

import pytest

from nardy_ai import analysis
from nardy_ai.cli import main
from nardy_ai.model import NeuralEvaluator, save_checkpoint
from nardy_ai.report import ReportError, matplotlib_version, write_report
from nardy_ai.tournament import TournamentConfig, run_tournament

HAVE_MATPLOTLIB = matplotlib_version() is not None
NO_MATPLOTLIB = "matplotlib is not installed (pip install -e '.[report]'): only the built-in figures are checked"
#: Both ways of drawing the figures; matplotlib's skipped with the reason where it is missing.
PLOTS = ["builtin", pytest.param("matplotlib", marks=pytest.mark.skipif(not HAVE_MATPLOTLIB, reason=NO_MATPLOTLIB))]
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
                 if shutil.which(n)), None)


def _figures(page: str) -> list[str]:
    """The page's SVG figures, each checked to be well-formed XML, their ids unique on the page
    and every reference to an id (clip paths, markers) one that is there."""
    svgs = re.findall(r"<svg.*?</svg>", page, re.S)
    for s in svgs:
        xml.dom.minidom.parseString(s)              # well-formed XML
    ids = re.findall(r' id="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    assert set(re.findall(r'(?:url\(#|href="#)([^)"]+)', page)) <= set(ids)
    return svgs


@pytest.fixture(scope="module")
def tournament(tmp_path_factory):
    """A finished 2-agent tournament of 4 games, analysed by a tiny untrained net."""
    d = tmp_path_factory.mktemp("rep")
    out = d / "t"
    run_tournament(TournamentConfig("backgammon", ("heuristic", "random"), 4, 0, False, 2), out, progress=False,
                   log=lambda m: None)
    net = NeuralEvaluator.create("backgammon", hidden=(8,), seed=1, device="cpu")
    save_checkpoint(d / "net.pt", {"kind": "model", "evaluator": net.state()})
    analysis.run_analysis(analysis.load_games([out]), f"td:{d / 'net.pt'}", out=out, progress=False,
                          log=lambda m: None)
    return out


def _training_folder(folder, cpu: bool):
    """A run folder whose metrics.jsonl has TD loss lines, strength checks, fit epochs and gates
    (the forms the trainers write), the last line torn by a kill; with ``cpu``, every line has
    the run's ``cpu_seconds`` as training.metrics_log writes it (here 1,800 more on each line,
    while the wall clock moves 30 s), without it the file is that of a run logged before."""
    lines = []
    for i in range(6):
        lines.append({"kind": "train", "games": 1000 * i, "time": 100.0 + 60 * i, "loss": 0.01 / (i + 1)})
        lines.append({"kind": "eval", "games": 1000 * i, "time": 130.0 + 60 * i, "vs_random/points_per_game": 0.5 + i / 10,
                      "vs_pubeval/points_per_game": -0.5 + i / 10})
    for g in (1, 2):
        for e in range(3):
            lines.append({"kind": "fit_epoch", "generation": g, "net": "contact", "epoch": e + 1,
                          "train_loss": 0.3 - e / 100, "val_loss": 0.31 - e / 100})
        lines.append({"kind": "gate", "generation": g, "points_per_game": 0.02 * g, "ci95_low": -0.01,
                      "ci95_high": 0.05, "promoted": g == 2})
    if cpu:
        for n, d in enumerate(lines):
            d["cpu_seconds"] = 1800.0 * n
    (folder / "metrics.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + '\n{"kind": "tra')
    return folder


def training_page(folder, plots: str) -> str:
    """The report page of the training run in ``folder``, checked to hold its six figures: TD
    loss by games and by hours, fit losses, gates, strength by games and by hours."""
    page = write_report(folder, plots=plots).read_text()
    assert len(_figures(page)) == 6
    return page


@pytest.fixture
def training(tmp_path):
    """A training run folder of a run logged before the CPU time was (wall clock only)."""
    return _training_folder(tmp_path, cpu=False)


@pytest.fixture
def training_cpu(tmp_path):
    """A training run folder whose lines carry the run's CPU seconds."""
    return _training_folder(tmp_path, cpu=True)


def test_a_shared_dice_gauntlet_shows_its_paired_differences(tmp_path):
    """--dice shared: the page names the shared dice and lists summary.json's paired rows."""
    cfg = TournamentConfig("backgammon", ("heuristic", "random", "pubeval"), 4, 2, True, 2, dice="shared")
    run_tournament(cfg, tmp_path / "t", progress=False, jobs=1, log=lambda s: None)
    page = write_report(tmp_path / "t", plots="builtin").read_text()
    [p] = json.loads((tmp_path / "t" / "summary.json").read_text())["paired"]
    assert "dice shared by the pairings" in page and "Paired on shared dice: against heuristic" in page
    assert f"random - pubeval</td><td>{p['difference']:+.3f}" in page
    assert f"[{p['ci95'][0]:+.3f}, {p['ci95'][1]:+.3f}]" in page


@pytest.mark.parametrize("plots", PLOTS)
def test_tournament_page(tournament, tmp_path, plots):
    path = write_report(tournament, tmp_path / "page.html", plots)
    page = path.read_text()
    figs = _figures(page)
    assert len(figs) == 4          # intervals, cross-table, running ppg, errors by class
    summary = json.loads((tournament / "summary.json").read_text())
    for r in summary["ranking"]:
        assert f"{r['points_per_game']:+.3f}" in page and r["agent"] in page
    a = json.loads((tournament / analysis.ANALYSIS_SUMMARY).read_text())
    for row in a["agents"].values():
        assert f"{row['all']['mean']:.1f}" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)      # nothing fetched from a network
    assert ("Figures drawn by matplotlib" in page) == (plots == "matplotlib")
    assert write_report(tournament) == tournament / "report.html"


@pytest.mark.parametrize("plots", PLOTS)
def test_training_page_of_a_run_without_cpu_time_uses_the_wall_clock(training, plots):
    page = training_page(training, plots)
    assert "vs_pubeval" in page and "promoted" in page
    assert "hours since the run started (wall clock: this run records no CPU time)" in page
    assert "CPU-hours" not in page
    if plots == "builtin":       # the last strength check: 130 + 300 s after the first line (100 s)
        assert "<title>vs_random: 0.092, 1</title>" in page


@pytest.mark.parametrize("plots", PLOTS)
def test_training_page_plots_against_cpu_hours(training_cpu, plots):
    page = training_page(training_cpu, plots)
    assert page.count(">CPU-hours<") == 3                   # the axis of TD loss, fit losses, strength
    assert "wall clock" not in page
    if plots == "builtin":       # the last strength check is line 11: 11 x 1800 s = 5.5 CPU-hours
        assert "<title>vs_random: 5.5, 1</title>" in page
        assert "<title>contact val: 9, 0.29</title>" in page   # the last fit epoch: line 18, 9 CPU-hours


def test_a_run_that_began_before_cpu_time_was_logged(tmp_path):
    """A run resumed with CPU time logging: only its later lines are on the CPU-hours axis."""
    lines = [{"kind": "eval", "games": 100 * i, "time": 100.0 + 60 * i, "vs_random/points_per_game": i / 10}
             for i in range(4)]
    for i, d in enumerate(lines[2:]):
        d["cpu_seconds"] = 3600.0 * (i + 1)
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    page = write_report(tmp_path, plots="builtin").read_text()
    assert "2 lines logged before the run recorded CPU time are not on these axes" in page
    assert "<title>vs_random: 2, 0.3</title>" in page and "<title>vs_random: 1, 0.2</title>" in page
    assert "<title>vs_random: 100, 0.1</title>" in page     # by games: every line


def test_training_page_lists_the_sessions_and_their_machines(training):
    """Each start or resume (a ``session`` line) is a row: when, where in the run, the backend and
    the machine; a session logged before the machine was recorded says so."""
    lines = (training / "metrics.jsonl").read_text().splitlines()[:-1]
    sessions = [{"kind": "session", "round": 1, "phase_at_start": "label", "time": 1796413527.355,
                 "backend": "2 processes", "machine": "AMD EPYC, 2 logical cores, Python 3.11.7"},
                {"kind": "session", "games": 12000, "time": 1796400000.0, "backend": "ray"}]
    (training / "metrics.jsonl").write_text("\n".join(lines + [json.dumps(x) for x in sessions]) + "\n")
    page = write_report(training, plots="builtin").read_text()
    assert "<h2>Sessions</h2>" in page
    assert ('<td class="l">2026-12-04 19:45</td><td class="l">round 1, label</td><td class="l">2 processes</td>'
            '<td class="l">AMD EPYC, 2 logical cores, Python 3.11.7</td>') in page
    assert '<td class="l">games 12,000</td><td class="l">ray</td><td class="l">(not recorded)</td>' in page
    (training / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    assert "Sessions" not in write_report(training, plots="builtin").read_text()


def test_plots_option(training, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)      # as if it were not installed
    assert "own SVG writer" in write_report(training).read_text()          # auto: the built-in figures
    with pytest.raises(ReportError, match=r"--plots matplotlib: matplotlib is not installed"):
        write_report(training, plots="matplotlib")
    assert main(["report", str(training), "--plots", "matplotlib"]) == 2
    assert "pip install -e '.[report]'" in capsys.readouterr().err
    with pytest.raises(ReportError, match="--plots: 'svg' is not one of"):
        write_report(training, plots="svg")


def test_errors(tmp_path, capsys):
    with pytest.raises(ReportError, match="neither"):
        write_report(tmp_path)
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "no such folder" in capsys.readouterr().err


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (chromium, chromium-browser or google-chrome): "
                                             "the page is not rendered in a browser here")
@pytest.mark.parametrize("plots", PLOTS)
@pytest.mark.parametrize("which", ["tournament", "training"])
def test_every_figure_draws_in_chromium(which, plots, tournament, training_cpu, tmp_path):
    folder = tournament if which == "tournament" else training_cpu
    page = write_report(folder, tmp_path / "page.html", plots).read_text()
    n = len(_figures(page))
    probe = ("<script>let ok = 0; const figs = document.querySelectorAll('svg.figure');"
             "for (const s of figs) { const b = s.getBBox(); const marks = s.querySelectorAll("
             "'circle,polyline,rect,line,path,use').length; if (b.width > 50 && b.height > 20 && marks > 3) ok++; }"
             "document.title = 'figures ' + ok + '/' + figs.length;</script>")
    (tmp_path / "probe.html").write_text(page.replace("</body>", probe + "</body>"))
    run = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                          (tmp_path / "probe.html").as_uri()], capture_output=True, text=True, timeout=120)
    title = re.search(r"<title>(.*?)</title>", run.stdout)
    assert title, run.stderr[-500:]
    assert title.group(1) == f"figures {n}/{n}"
