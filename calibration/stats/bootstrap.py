"""The percentile bootstrap CI of Cohen's kappa: resamples of the items, every resample's kappa at once.

Pure module: plain data in, plain data out (numpy; the ratings read by :mod:`calibration.stats.kappa`).
It creates no thread: the index blocks run on the ``executor`` the caller hands in, else in turn.
:mod:`calibration.stats.agreement` re-exports its public names. Timings and how the resamples were
checked: docs/agreement.md.

Definitions (n items rated by both raters, K classes, d_ij the disagreement weights of
:mod:`calibration.stats.kappa`):

- Bootstrap CI: the percentile interval (Efron & Tibshirani 1993, "An Introduction to the Bootstrap",
  ch. 13) of kappa over resamples of the items with replacement, on the same scale as the estimate:
  the alpha/2 and 1 - alpha/2 quantiles of the resample kappas that are defined; the others (a single
  shared class) are dropped and counted.
- A resample's kappa from its confusion matrix C (p = C / n): kappa = 1 - sum d_ij p_ij /
  sum d_ij p_i. p_.j; undefined (NaN) where the expected disagreement is 0.
- Resampling n items with replacement puts Multinomial(n, n_ij / n) items in the cells (each item falls
  in cell (i, j) with probability n_ij / n, independently), so drawing the cell counts gives the same
  bootstrap distribution of kappa as drawing the item indices, in O(n_resamples * K^2) work instead of
  O(n_resamples * n) (but not the same resamples for a given seed).

Contract: seeded and deterministic; the index resamples of (n, n_resamples, seed) do not depend on the
executor (blocks are seeded by their position, ``SeedSequence(seed).spawn``); the scale is fixed by
the full sample, so a weighted kappa measures the same distances in every resample.
"""

from __future__ import annotations

import numbers
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from calibration.stats.interval import Interval
from calibration.stats.kappa import (
    InvalidRatings,
    RaterPair,
    Weights,
    check_weights,
    cohen_of_pair,
    disagreement_weights,
)

if TYPE_CHECKING:
    from numpy.typing import NDArray

# Resample index blocks hold about this many item indices: small enough to stay in cache (1 MiB of int32
# indices, 2 MiB of codes per block and worker), large enough that Python's overhead per block is noise.
_BLOCK_ELEMENTS = 1 << 18
# Below this many draws in all, threads cost more than they save.
_THREADED_ELEMENTS = 1 << 22


def _block_plan(n: int, n_resamples: int, seed: int) -> list[tuple[int, int, np.random.SeedSequence]]:
    """Blocks of resamples (start, size, seed of the block): deterministic for (n, n_resamples, seed)."""
    per_block = max(1, _BLOCK_ELEMENTS // max(n, 1))
    starts = list(range(0, n_resamples, per_block))
    seeds = np.random.SeedSequence(seed).spawn(len(starts))
    return [(start, min(per_block, n_resamples - start), s) for start, s in zip(starts, seeds)]


def _draw(seed: np.random.SeedSequence, size: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(
        0, n, size=(size, n), dtype=np.int32 if n < 2**31 else np.int64
    )


def resample_indices(n: int, n_resamples: int, seed: int = 0) -> Iterator[np.ndarray]:
    """The item indices of the bootstrap resamples, block by block: ``(block size, n)`` integer matrices.

    Exactly the resamples that :func:`bootstrap_ci` and :func:`bootstrap_kappas` use for the same
    ``n``, ``n_resamples`` and ``seed`` (for tests and audits).
    """
    for _start, size, seed_seq in _block_plan(n, n_resamples, seed):
        yield _draw(seed_seq, size, n)


def _resampled_confusions(
    pair: RaterPair, n_resamples: int, seed: int, executor: Executor | None
) -> NDArray[np.int64]:
    """Confusion matrices of all resamples, shape (n_resamples, K, K).

    Each item's (i, j) cell is coded i*K + j; the resampled cells of resample r are offset by r*K*K and
    counted with one ``np.bincount`` per block of resamples. Blocks are seeded by their position
    (``SeedSequence(seed).spawn``), so the result does not depend on the number of threads; numpy's
    random draws and ``take`` release the GIL, so blocks run on the caller's ``executor`` when it
    hands one in (and the work is large enough to pay for it), else in turn.
    """
    n, cells = pair.n, pair.k * pair.k
    cell_of_item = (pair.a * pair.k + pair.b).astype(np.uint8 if cells <= 256 else np.int64)
    counts = np.empty((n_resamples, cells), dtype=np.int64)
    plan = _block_plan(n, n_resamples, seed)
    per_block = plan[0][1]
    offsets = (np.arange(per_block, dtype=np.intp) * cells)[:, None]
    buffers = threading.local()  # one set per thread, reused: no page faults per block

    def count_block(task: tuple[int, int, np.random.SeedSequence]) -> None:
        start, size, seed_seq = task
        if not hasattr(buffers, "flat"):
            buffers.resampled = np.empty((per_block, n), dtype=cell_of_item.dtype)
            buffers.flat = np.empty((per_block, n), dtype=np.intp)
        # mode="clip" lets take write straight into the buffer; the indices are all in range.
        resampled = np.take(cell_of_item, _draw(seed_seq, size, n), out=buffers.resampled[:size], mode="clip")
        flat = np.add(resampled, offsets[:size], out=buffers.flat[:size], dtype=np.intp)
        counts[start : start + size] = np.bincount(flat.ravel(), minlength=size * cells).reshape(size, cells)

    if executor is not None and len(plan) > 1 and n * n_resamples >= _THREADED_ELEMENTS:
        list(executor.map(count_block, plan))
    else:
        for task in plan:
            count_block(task)
    return counts.reshape(n_resamples, pair.k, pair.k)


def multinomial_confusions(pair: RaterPair, n_resamples: int, seed: int) -> NDArray[np.int64]:
    """Confusion matrices of resamples drawn as cell counts: shape (n_resamples, K, K).

    Resampling n items with replacement puts Multinomial(n, observed cell shares) items in the cells, so
    drawing the counts directly gives the same bootstrap distribution of kappa as the index matrix, in
    O(n_resamples * K^2) instead of O(n_resamples * n) (but not the same resamples for a given seed).
    """
    observed = pair.confusion().ravel()
    used = np.flatnonzero(observed)
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    draws = rng.multinomial(pair.n, observed[used] / pair.n, size=n_resamples)
    counts = np.zeros((n_resamples, pair.k * pair.k), dtype=np.int64)
    counts[:, used] = draws
    return counts.reshape(n_resamples, pair.k, pair.k)


def _confusions(
    pair: RaterPair, n_resamples: int, seed: int, method: str, executor: Executor | None
) -> NDArray[np.int64]:
    if method == "indices":
        return _resampled_confusions(pair, n_resamples, seed, executor)
    if method == "multinomial":
        return multinomial_confusions(pair, n_resamples, seed)
    raise InvalidRatings(f"method must be 'indices' or 'multinomial', got {method!r}")


def kappas_of_confusions(confusions: NDArray[np.integer[Any]], weights: Weights) -> NDArray[np.float64]:
    """kappa = 1 - sum d_ij p_ij / sum d_ij p_i. p_.j for a stack of confusion matrices; NaN = undefined.

    The expected disagreement is exactly 0 only when both raters used one and the same class.
    """
    p = confusions / confusions.sum(axis=(1, 2), keepdims=True)
    d = disagreement_weights(confusions.shape[1], weights)
    observed = np.einsum("rij,ij->r", p, d)
    expected = np.einsum("ri,ij,rj->r", p.sum(axis=2), d, p.sum(axis=1))
    kappas = np.full(len(p), np.nan)
    defined = expected > 0
    kappas[defined] = 1.0 - observed[defined] / expected[defined]
    return kappas


def bootstrap_kappas(
    a: Sequence[Any],
    b: Sequence[Any],
    *,
    weights: Weights = None,
    labels: Sequence[Any] | None = None,
    n_resamples: int = 2000,
    seed: int = 0,
    method: Literal["indices", "multinomial"] = "indices",
    executor: Executor | None = None,
) -> NDArray[np.float64]:
    """Kappa of each bootstrap resample (NaN where a resample's kappa is undefined), vectorized.

    The scale is fixed by the full sample (``labels`` or the distinct ratings of all items), so a
    weighted kappa measures the same distances in every resample. Resamples: :func:`resample_indices`.
    """
    pair = RaterPair(a, b, labels)
    weights = check_weights(weights)
    check_resamples(n_resamples)
    if pair.n == 0:
        return np.full(n_resamples, np.nan)
    return kappas_of_confusions(_confusions(pair, n_resamples, seed, method, executor), weights)


def check_resamples(n_resamples: int, alpha: float = 0.05) -> None:
    """Raises :class:`InvalidRatings` unless ``n_resamples`` is a positive integer and 0 < alpha < 1."""
    if not isinstance(n_resamples, numbers.Integral) or n_resamples < 1:
        raise InvalidRatings(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if not 0 < alpha < 1:
        raise InvalidRatings(f"alpha must be between 0 and 1, got {alpha!r}")


BootstrapCI = Interval  # the one interval type (calibration.stats.interval), by its former name


def percentile_ci(kappas: NDArray[np.float64], alpha: float, details: dict[str, Any]) -> BootstrapCI:
    """The percentile CI of resample ``kappas`` (NaN = undefined, dropped and counted in
    ``n_undefined``), with ``details`` as its attributes; (None, None) when none is defined."""
    defined = kappas[~np.isnan(kappas)]
    details = {**details, "n_undefined": int(len(kappas) - len(defined))}
    if len(defined) == 0:
        return BootstrapCI(None, None, **details, undefined_reason="kappa is undefined in every resample")
    low, high = np.quantile(defined, [alpha / 2, 1 - alpha / 2])
    return BootstrapCI(float(low), float(high), **details, undefined_reason=None)


def bootstrap_ci(
    a: Sequence[Any],
    b: Sequence[Any],
    *,
    weights: Weights = None,
    labels: Sequence[Any] | None = None,
    n_resamples: int = 2000,
    alpha: float = 0.05,
    seed: int = 0,
    method: Literal["indices", "multinomial"] = "multinomial",
    executor: Executor | None = None,
) -> BootstrapCI:
    """Percentile bootstrap (1 - alpha) CI of Cohen's kappa: ``(low, high)``, seeded, vectorized.

    Resamples the n complete items with replacement and computes every resample's kappa from its
    confusion matrix (:func:`kappas_of_confusions`). The interval is the alpha/2 and 1 - alpha/2
    quantiles of the defined resample kappas; resamples whose kappa is undefined (a single shared
    class) are dropped and counted in ``.n_undefined``. ``(None, None)`` with ``.undefined_reason``
    when the estimate itself is undefined. Efron & Tibshirani (1993), ch. 13.

    The default, ``method="multinomial"``, draws each resample's cell counts from Multinomial(n,
    observed cell shares): the same bootstrap distribution (module docstring) in O(n_resamples * K^2)
    work. ``method="indices"`` draws the item indices themselves (an ``(n_resamples, n)`` index
    matrix, in blocks, :func:`resample_indices`) and counts every resample's confusion matrix with one
    ``np.bincount`` over (resample, i, j) codes; it is kept for cross-checks: its every resample
    equals scikit-learn's kappa on the same items. Timings of both: docs/agreement.md.
    ``executor``: where the index blocks run (the caller's threads; default: in turn).
    """
    weights = check_weights(weights)
    check_resamples(n_resamples, alpha)
    pair = RaterPair(a, b, labels)
    estimate = cohen_of_pair(pair, weights)
    details = {
        "estimate": estimate["kappa"],
        "n": pair.n,
        "n_resamples": n_resamples,
        "alpha": alpha,
        "seed": seed,
        "weights": weights,
        "method": method,
    }
    if method not in ("indices", "multinomial"):
        raise InvalidRatings(f"method must be 'indices' or 'multinomial', got {method!r}")
    if estimate["kappa"] is None:
        return BootstrapCI(
            None, None, **details, n_undefined=None, undefined_reason=estimate["undefined_reason"]
        )
    kappas = kappas_of_confusions(_confusions(pair, n_resamples, seed, method, executor), weights)
    return percentile_ci(kappas, alpha, details)
