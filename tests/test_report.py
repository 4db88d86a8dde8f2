"""``nardy report`` (nardy_ai/report.py): one self-contained HTML page for a tournament folder or a
training run folder; every figure is inline SVG that parses, and, where a Chromium is installed,
draws in a real browser."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.dom.minidom

import pytest

from nardy_ai import analysis
from nardy_ai.cli import main
from nardy_ai.model import NeuralEvaluator, save_checkpoint
from nardy_ai.report import ReportError, write_report
from nardy_ai.tournament import TournamentConfig, run_tournament

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
                 if shutil.which(n)), None)


def _figures(page: str) -> list[str]:
    svgs = re.findall(r"<svg.*?</svg>", page, re.S)
    for s in svgs:
        xml.dom.minidom.parseString(s)              # well-formed XML
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


@pytest.fixture
def training(tmp_path):
    """A run folder whose metrics.jsonl has TD loss lines, strength checks, fit epochs and gates
    (the forms the trainers write), the last line torn by a kill."""
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
    (tmp_path / "metrics.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + '\n{"kind": "tra')
    return tmp_path


def test_tournament_page(tournament, tmp_path):
    path = write_report(tournament, tmp_path / "page.html")
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
    assert write_report(tournament) == tournament / "report.html"


def test_training_page(training):
    page = write_report(training).read_text()
    assert len(_figures(page)) == 5          # TD loss, fit losses, gates, strength by games and by hours
    assert "vs_pubeval" in page and "promoted" in page


def test_errors(tmp_path, capsys):
    with pytest.raises(ReportError, match="neither"):
        write_report(tmp_path)
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "no such folder" in capsys.readouterr().err


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (chromium, chromium-browser or google-chrome): "
                                             "the page is not rendered in a browser here")
@pytest.mark.parametrize("which", ["tournament", "training"])
def test_every_figure_draws_in_chromium(which, tournament, training, tmp_path):
    folder = tournament if which == "tournament" else training
    page = write_report(folder, tmp_path / "page.html").read_text()
    n = len(_figures(page))
    probe = ("<script>let ok = 0; const figs = document.querySelectorAll('svg.figure');"
             "for (const s of figs) { const b = s.getBBox(); const marks = s.querySelectorAll("
             "'circle,polyline,rect,line').length; if (b.width > 50 && b.height > 20 && marks > 3) ok++; }"
             "document.title = 'figures ' + ok + '/' + figs.length;</script>")
    (tmp_path / "probe.html").write_text(page.replace("</body>", probe + "</body>"))
    run = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                          (tmp_path / "probe.html").as_uri()], capture_output=True, text=True, timeout=120)
    title = re.search(r"<title>(.*?)</title>", run.stdout)
    assert title, run.stderr[-500:]
    assert title.group(1) == f"figures {n}/{n}"
