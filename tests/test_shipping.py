"""Checkpoints shipped to workers that cannot read them (:mod:`nardy_ai.shipping`)."""

from __future__ import annotations

import hashlib

from nardy_ai.shipping import checkpoint_files, shipped_spec


def _shipped(tmp_path, options: str) -> tuple:
    """A checkpoint file on the driver, the ``td:`` spec of ``options`` reading it, and what
    the driver ships for the spec and a built-in agent."""
    net = tmp_path / "net.pt"
    net.write_bytes(b"weights")
    spec = f"td:{net}{options}"
    return net, spec, checkpoint_files([spec, "heuristic"])


def test_shipped_spec_reads_the_local_file_when_it_has_the_content(tmp_path):
    net, spec, files = _shipped(tmp_path, "@1ply")
    assert list(files) == [str(net)]
    assert shipped_spec(spec, files) == spec


def test_shipped_spec_builds_from_a_cached_copy_when_the_file_is_gone(tmp_path):
    net, spec, files = _shipped(tmp_path, "@1ply+cube0ply")
    net.unlink()                                        # this worker cannot read the path
    built = shipped_spec(spec, files)
    assert built.startswith("td:") and built.endswith("net.pt@1ply+cube0ply") and built != spec
    with open(built[3:-len("@1ply+cube0ply")], "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == files[str(net)][0]


def test_shipped_spec_leaves_other_agents_alone(tmp_path):
    files = {str(tmp_path / "net.pt"): ("0" * 64, b"")}
    assert shipped_spec("heuristic", files) is None
    assert shipped_spec(f"td:{tmp_path / 'elsewhere.pt'}", files) is None
