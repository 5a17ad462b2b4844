"""The #39 benches through judged_kappa, smaller and seeded (bench/judged_design.py,
bench/judged_sequential.py; the full figures and commands: docs/agreement.md)."""

from __future__ import annotations

import argparse

import pytest

from tests.conftest import shared_dir

SHARED = shared_dir()
needs_shared = pytest.mark.skipif(SHARED is None, reason="../shared/data not found")


@needs_shared
def test_designs_through_judged_kappa() -> None:
    from bench.judged_design import run_design
    from bench.kappa_design import Population

    assert SHARED is not None
    population = Population(SHARED / "data" / "trec_rag_umbrela")
    few = run_design(population, "2x100", samples=30, seed=3)
    assert few["uncalibrated"] == 1.0  # 2 queries: no verdict, every sample
    ten = run_design(population, "10x30", samples=200, seed=3, check=50)
    assert ten["mismatches"] == 0  # judged_kappa's interval is kappa_ci_clustered's
    assert ten["coverage"] >= 0.92 and ten["item_coverage"] < ten["coverage"]
    assert ten["width"] > ten["item_width"]


@needs_shared
def test_peeking_at_whole_queries_the_sequence_errs_less_than_the_fixed_interval() -> None:
    from bench.judged_sequential import simulate
    from bench.kappa_design import Population

    assert SHARED is not None
    population = Population(SHARED / "data" / "trec_rag_umbrela")
    args = argparse.Namespace(runs=300, per_query=10, topics="with", every="query", seed=5, check=30)
    result = simulate(args, population)
    assert result["checked"]["differing"] == 0  # the vectorised copy is judged_kappa's arithmetic
    tally = result["tally"]
    near = [1, 2]  # the bars 0.03 either side of the all-topics kappa
    sequence = sum(tally["sequence, by query"]["wrong"][i] for i in near)
    fixed = sum(tally["fixed, by query, every look"]["wrong"][i] for i in near)
    assert sequence < fixed
    assert max(tally["sequence, by query"]["wrong"]) / 300 <= 0.025
