"""The grade scales and their wording: one text for the labelling pages and the
judge prompts, so people and the judge answer the same question (DESIGN
principle 6).

Relevance follows TREC's 0-3 scale (TREC Deep Learning, TREC RAG, UMBRELA),
in the project's own words, so labels made here compare with public qrels.

Each rubric carries its guidelines (#43): the grade definitions and one worked example per grade,
shown to people on a key of the labelling page. The built-in ones (:func:`default_guidelines`)
are version 0; an admin's edit is version 1, 2, ... of the rubric, kept in the store
(:mod:`annotation.store.guidelines`), and every label made here records the version in force.
Edited guidelines go into the judge's prompt too (``judge.prompts``), so a change of guidelines
is a new judge, as a change of its prompt is.
"""

from __future__ import annotations

import re
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
    "Guidelines",
    "InvalidGuidelines",
    "MAX_GUIDELINES_CHARS",
    "default_guidelines",
    "check_guidelines_text",
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


# ---------------------------------------------------------------- guidelines

MAX_GUIDELINES_CHARS = 20_000  # a page of definitions and examples, read beside an item


class InvalidGuidelines(DenominatorError, ValueError):
    """Guidelines text that cannot be kept: empty, too long, or holding control characters."""


@dataclass(frozen=True)
class Guidelines:
    """A rubric's guidelines as one version: ``version`` 0 is the built-in text
    (:func:`default_guidelines`, never stored); 1, 2, ... are an admin's edits, in order, with
    who made each and when (UTC)."""

    rubric: str
    version: int
    text: str
    who: str | None = None
    created_at: str | None = None

    @property
    def edited(self) -> bool:
        """Whether an admin wrote these (version 1 or later): only then are they in the judge's prompt."""
        return self.version > 0


# One worked example per grade, in the project's own words (the built-in guidelines).
_EXAMPLES = {
    "relevance": (
        'Query: "How long does a refund take?"',
        {
            3: '"A refund reaches your account within 5 working days of our receiving the returned '
            'item." Devoted to the query, with the exact answer.',
            2: '"Pack the item in its box and print the label from your account. Once it is back '
            'with us the money usually follows within a week, though some banks take longer." Some '
            "of the answer, approximate and buried among other steps.",
            1: '"Refunds are paid to the card used for the purchase." On the topic of refunds, but '
            "says nothing of how long one takes.",
            0: '"Our offices are closed on public holidays." Nothing to do with refunds.',
        },
    ),
    "faithfulness": (
        'Question: "When is the museum open?" Context shown: "The museum opens at 9:00 and closes '
        'at 17:00, Tuesday to Sunday."',
        {
            2: '"From 9:00 to 17:00, Tuesday to Sunday." Every claim is in the context.',
            1: '"From 9:00 to 17:00 every day but Monday, and entry is free." The hours are in the '
            "context; free entry is not.",
            0: '"From 10:00 to 18:00 every day." The context says otherwise.',
        },
    ),
    "preference": (
        'Question: "How do I reset my password?"',
        {
            0: 'A: "Open Settings, then Security, then Reset password; a link comes by e-mail." '
            'B: "You can reset it in the app." A says how; B only that it can be done.',
            1: 'A: "Contact support." B: "Open Settings, then Security, then Reset password." B '
            "answers the question; A sends the person elsewhere.",
            2: 'A: "Settings, Security, Reset password." B: "Go to Security in Settings and choose '
            'Reset password." The same steps in other words.',
            3: 'A: "Passwords cannot be reset." B: "Try again later." Neither helps, and A is wrong.',
        },
    ),
}


def default_guidelines(rubric: Rubric | str) -> Guidelines:
    """The built-in guidelines of ``rubric`` (version 0): its question, each grade's definition
    (the scale's own wording, as the buttons and the judge's scale say it) and a worked example
    per grade."""
    rubric = get_rubric(rubric) if isinstance(rubric, str) else rubric
    setting, examples = _EXAMPLES[rubric.name]
    lines = [rubric.question, "", "Grades:"]
    # a preference is pressed and read by its name (A, B, tie, both bad), a grade by its number
    numbered = rubric.name != PREFERENCE.name
    lines += [
        f"- {value} {rubric.wording(value)}" if numbered else f"- {rubric.wording(value)}"
        for value in sorted(rubric.scale)
    ]
    lines += ["", "Worked examples.", setting]
    for value in sorted(examples):
        name = rubric.wording(value).partition(":")[0]
        lines.append(f"- {value} ({name}): {examples[value]}" if numbered else f"- {name}: {examples[value]}")
    return Guidelines(rubric.name, 0, "\n".join(lines))


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def check_guidelines_text(text: str) -> str:
    """The text as kept: line ends made ``\\n``, trailing spaces and blank lines at the end
    removed; :class:`InvalidGuidelines` when it is empty, over :data:`MAX_GUIDELINES_CHARS`, or
    holds a control character other than a tab or a line end."""
    if not isinstance(text, str):
        raise InvalidGuidelines(f"guidelines are text, not {type(text).__name__}")
    kept = "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    kept = kept.strip("\n")
    if not kept.strip():
        raise InvalidGuidelines(
            "the guidelines are empty: write the grade definitions and an example per grade"
        )
    if len(kept) > MAX_GUIDELINES_CHARS:
        raise InvalidGuidelines(
            f"the guidelines are {len(kept):,} characters; at most {MAX_GUIDELINES_CHARS:,} are kept"
        )
    bad = _CONTROL.search(kept)
    if bad:
        line = kept.count("\n", 0, bad.start()) + 1
        raise InvalidGuidelines(f"line {line} of the guidelines holds the control character {bad.group()!r}")
    return kept
