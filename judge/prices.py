"""The price table of the judge's endpoints: US dollars per million tokens per model (and the Batch
API's, when it has one), read from a small JSON file; what a run costs, said without a made-up 0.
The client, the plan and the renderers read it; it reads no network and imports no client.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from annotation.errors import DenominatorError
from annotation.values import read_small_file

__all__ = ["InvalidPrices", "Prices"]


class InvalidPrices(DenominatorError, ValueError):
    """A price table that is not ``{"model": {"input": $/1M, "output": $/1M}}``."""


@dataclass
class Prices:
    """US dollars per million tokens, per model: ``{"model": {"input": 0.15, "output": 0.6}}``, and
    optionally the Batch API's price, ``"batch_input"`` and ``"batch_output"`` (both or neither)."""

    table: dict[str, dict[str, float]] = field(default_factory=dict)

    @staticmethod
    def load(path: str | os.PathLike[str] | None) -> Prices:
        if not path:
            return Prices()
        try:
            data = json.loads(read_small_file(path, "the price table").decode("utf-8"))  # bounded (#38)
        except (OSError, ValueError) as exc:  # not JSON, not UTF-8
            raise InvalidPrices(f"{path}: not a JSON price table ({exc})") from None
        table = {}
        for model, price in data.items() if isinstance(data, dict) else []:
            if not (isinstance(price, dict) and {"input", "output"} <= set(price)):
                raise InvalidPrices(
                    f'{path}: {model!r}: expected {{"input": $/1M tokens, "output": $/1M tokens}}'
                )
            if ("batch_input" in price) != ("batch_output" in price):
                raise InvalidPrices(
                    f'{path}: {model!r}: a batch price needs both "batch_input" and "batch_output"'
                )
            keys = [k for k in ("input", "output", "batch_input", "batch_output") if k in price]
            try:
                table[model] = {k: float(price[k]) for k in keys}
            except (TypeError, ValueError):
                raise InvalidPrices(
                    f"{path}: {model!r}: prices must be numbers (dollars per million tokens)"
                ) from None
        return Prices(table)

    def cost(self, model: str, tokens_in: int, tokens_out: int, batch: bool = False) -> float | None:
        """The cost in dollars (None: no price for ``model``); ``batch``: at the batch price
        when the table has one, else at the live price."""
        price = self.table.get(model)
        if price is None:
            return None
        kind = "batch_" if batch and "batch_input" in price else ""
        return (tokens_in * price[kind + "input"] + tokens_out * price[kind + "output"]) / 1e6

    def describe(self, model: str, tokens_in: int, tokens_out: int, batch: bool = False) -> str:
        """``$0.0123``, ``$0.0061 at the batch price``, or ``cost unknown (...)``: never a made-up 0."""
        cost = self.cost(model, tokens_in, tokens_out, batch)
        if cost is None:
            return f"cost unknown (no price for {model!r}; give --prices FILE)"
        if not batch:
            return f"${cost:.4f}"
        if "batch_input" in self.table[model]:
            return f"${cost:.4f} at the batch price"
        return f"${cost:.4f} at the live price (no batch price for {model!r} in the price table)"
