"""``audit`` and ``check`` read a run file in pieces (#27): the same reports as the run read
whole, one read of the file for check's audit and metrics, and never the whole run held."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

import calibration.run_file as run_file
from annotation.formats.columnar import lean_pieces
from annotation.formats.trec import read_qrels, read_run
from calibration import actions, commands_cli
from calibration.__main__ import main
from calibration.audit import parse_gate
from calibration.run_file import _Depth
from calibration.scorer import run_depth
from tests.test_metrics_stream import RUN_COLUMNS, write_collection

SETTINGS = [
    dict(),  # stage 1: the run's own depth
    dict(fetch_depth=20),
    dict(fetch_depth=5, missing="zero"),
    dict(truth=True),
    dict(gates=[parse_gate("judged-at-k<0.5"), parse_gate("stage1-recall<0.9"), parse_gate("duplicates")]),
]


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of a few lines, so every query boundary falls everywhere in them."""
    monkeypatch.setattr(run_file, "lean_pieces", functools.partial(lean_pieces, piece_bytes=200))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("settings", SETTINGS, ids=["own-depth", "fetch-depth", "zero", "truth", "gates"])
def test_audit_of_a_run_file_is_the_audit_of_the_run(
    tmp_path: Path, small_pieces: None, seed: int, settings: dict
) -> None:
    qrels_path, run_path = write_collection(tmp_path, seed)
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    options = dict(settings)
    if options.pop("truth", False):
        (tmp_path / "t").mkdir()
        options["truth"] = read_qrels(write_collection(tmp_path / "t", seed + 10)[0])
    whole = actions.audit(qrels, run, 5, 1, **options)
    streamed = actions.audit(qrels, run_path, 5, 1, **options)
    assert streamed == whole
    if not settings:
        assert whole["fetch_depth"] == run_depth(run) > 5  # the own-depth path was taken
        assert whole["stage1"].startswith(f"stage 1 taken as the run's depth {run_depth(run)}")


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("missing", ["drop", "zero"])
def test_check_of_a_run_file_is_the_check_of_the_run_from_one_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_pieces: None, seed: int, missing: str
) -> None:
    qrels_path, run_path = write_collection(tmp_path, seed)
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    whole = actions.check(qrels, run, 5, 1, fetch_depth=10, missing=missing, no_store=True)
    reads = []
    real = run_file.evaluate_run_file
    monkeypatch.setattr(run_file, "evaluate_run_file", lambda *a, **kw: reads.append(a[1]) or real(*a, **kw))
    streamed = actions.check(qrels, run_path, 5, 1, fetch_depth=10, missing=missing, no_store=True)
    assert streamed == whole
    assert reads == [run_path]  # the audit and the metrics from one read of the file


def test_an_ungrouped_run_file_is_read_whole_with_the_same_report(tmp_path: Path) -> None:
    qrels_path, run_path = write_collection(tmp_path, 3, grouped=False)
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    assert actions.audit(qrels, run_path, 5) == actions.audit(qrels, run, 5)
    assert actions.check(qrels, run_path, 5, no_store=True) == actions.check(qrels, run, 5, no_store=True)


@pytest.mark.parametrize("piece_bytes", [40, 100, 333, 1 << 20])
def test_the_depth_counted_in_pieces_is_the_runs(tmp_path: Path, piece_bytes: int) -> None:
    """The deepest query cut between pieces (several times) is counted whole."""
    lines = [f"short 0 d{i} {i + 1} 1.0 t\n" for i in range(3)]
    lines += [f"deep 0 d{i} {i + 1} {100 - i} t\n" for i in range(57)]
    lines += [f"q{j} 0 d{i} {i + 1} 1.0 t\n" for j in range(5) for i in range(j + 1)]
    path = tmp_path / "run.txt"
    path.write_text("".join(lines))
    depth = _Depth()
    pieces = list(depth.count(lean_pieces(path, RUN_COLUMNS, ("r",), ("s",), piece_bytes=piece_bytes)))
    assert sum(p.num_rows for p in pieces) == len(lines)
    assert depth.deepest == run_depth(read_run(path)) == 57


def test_the_commands_never_read_a_grouped_run_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    qrels_path, run_path = write_collection(tmp_path, 1)

    def whole(path: object) -> None:
        raise AssertionError(f"{path} read whole")

    monkeypatch.setattr(run_file, "read_ranked", whole)
    monkeypatch.setattr(commands_cli, "read_ranked", whole)
    for argv in (
        ["audit", str(qrels_path), str(run_path), "-k", "5", "--fetch-depth", "10"],
        ["audit", str(qrels_path), str(run_path), "-k", "5"],
        ["check", str(qrels_path), str(run_path), "-k", "5", "--no-store"],
    ):
        assert main(argv) in (0, 1), capsys.readouterr().err
    assert "read whole" not in capsys.readouterr().err
