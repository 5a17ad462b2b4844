"""The grade scales and their wording: one text for the labelling pages and the
judge prompts, so people and the judge answer the same question (DESIGN
principle 6).

Relevance follows TREC's 0-3 scale (TREC Deep Learning, TREC RAG, UMBRELA),
in the project's own words, so labels made here compare with public qrels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import overload

from annotation.errors import DenominatorError

__all__ = [
    "Rubric",
    "NO_PREFERENCE",
    "UnknownRubric",
    "RELEVANCE",
    "FAITHFULNESS",
    "PREFERENCE",
    "RUBRICS",
    "DEFAULT_MIN_GRADE",
    "get_rubric",
    "RUBRIC_OF_KIND",
    "KIND_OF_RUBRIC",
    "candidate_value",
]


class UnknownRubric(DenominatorError, KeyError):
    """A rubric name that is not one of RUBRICS."""


@dataclass(frozen=True)
class Rubric:
    """A named scale: each value with its wording, and the question asked."""

    name: str
    question: str
    scale: dict[int, str]

    def wording(self, value: int) -> str:
        return self.scale[value]

    def check(self, value: int) -> int:
        """The value, if it is on the scale; ValueError otherwise."""
        if isinstance(value, bool) or not isinstance(value, int) or value not in self.scale:
            values = ", ".join(str(v) for v in self.scale)
            raise ValueError(f"{value!r} is not on the {self.name} scale; expected one of {values}")
        return value


RELEVANCE = Rubric(
    name="relevance",
    question="How well does this chunk answer the query?",
    scale={
        0: "irrelevant: nothing to do with the query",
        1: "related: on the topic, but no answer in it",
        2: "highly relevant: holds some of the answer, perhaps unclear or buried in other material",
        3: "perfectly relevant: devoted to the query, holds the exact answer",
    },
)

FAITHFULNESS = Rubric(
    name="faithfulness",
    question="Is every claim of the answer supported by the contexts shown?",
    scale={
        0: "unsupported: a claim is contradicted by, or absent from, the contexts",
        1: "partly supported: some claims are in the contexts, some are not",
        2: "fully supported: every claim is in the contexts",
    },
)

# A pair is stored as the candidate that won, in the order the two were shown. "both bad"
# is no preference between them, as a tie is (position bias and the swap-averaged
# preference count it as a tie: calibration.stats.position), and says more: neither answer will do.
PREFERENCE = Rubric(
    name="preference",
    question="Which answer is better?",
    scale={
        0: "A: the answer shown first is better",
        1: "B: the answer shown second is better",
        2: "tie: neither answer is better than the other",
        3: "both bad: neither answer is acceptable",
    },
)
NO_PREFERENCE = (2, 3)  # the preference values that prefer neither answer: tie, both bad

RUBRICS = {rubric.name: rubric for rubric in (RELEVANCE, FAITHFULNESS, PREFERENCE)}
# the kind of item each rubric grades: a chunk under a query, a trace, a pair of traces
RUBRIC_OF_KIND = {"chunk": "relevance", "trace": "faithfulness", "pair": "preference"}
KIND_OF_RUBRIC = {rubric: kind for kind, rubric in RUBRIC_OF_KIND.items()}

# Relevant means grade >= 1 on RELEVANCE unless the user sets another threshold (trec_eval's -l)
DEFAULT_MIN_GRADE = 1


def get_rubric(name: str) -> Rubric:
    try:
        return RUBRICS[name]
    except KeyError:
        raise UnknownRubric(f"unknown rubric {name!r}; expected one of {', '.join(RUBRICS)}") from None


@overload
def candidate_value(kind: str, value: int, shown: str | None) -> int: ...


@overload
def candidate_value(kind: str, value: int | None, shown: str | None) -> int | None: ...


def candidate_value(kind: str, value: int | None, shown: str | None) -> int | None:
    """A stored label value as the candidate it names: on a pair shown B first (``shown`` "BA"),
    0 (first shown) is B and 1 is A; every other value is itself."""
    if kind == "pair" and shown == "BA" and value in (0, 1):
        return 1 - value
    return value
