"""The labelling queue and what a page shows of an item (:class:`Queue`).

Blind by construction: these queries read only items, assignments, queries, chunks,
traces' question/contexts/answer and the annotator's own labels; never runs, rankings,
system names, judge labels or other people's labels.

A queue holds live items only, and an annotator's label that counts is their newest live row
(:mod:`annotation.store.retirements`): an item standing on a retired import's rows leaves every
queue, and a retired label file's grades no longer mark an item done.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from annotation.options import default, option
from annotation.store.base import ITEM_KINDS, StoreBase, StoreError, utc_now
from annotation.store.retirements import NONE_RETIRED, all_live, live, live_item

__all__ = [
    "Queue",
    "QueueRule",
    "ItemTexts",
    "CURRENT_LABEL",
    "HANDOUT_MODES",
    "LEASE_ENV",
    "lease_seconds",
    "open_order",
    "TabSession",
    "Waiting",
    "BatchProgress",
]

HANDOUT_MODES: tuple[str, ...] = option("handout_mode").choices or ()  # the options table's

LEASE_ENV = "DENOMINATOR_LEASE_MINUTES"
LEASE_MINUTES = 5.0  # how long an item stays a tab's without a key press there


def lease_seconds() -> float:
    """How long a tab keeps its item on screen without a key press there before another of the
    person's tabs (or servers) may be shown it: ``DENOMINATOR_LEASE_MINUTES``, else 5."""
    raw = os.environ.get(LEASE_ENV, "").strip()
    if not raw:
        return LEASE_MINUTES * 60
    try:
        minutes = float(raw)
    except ValueError:
        minutes = -1.0
    if not 0 < minutes <= 24 * 60:
        raise StoreError(f"{LEASE_ENV} must be a number of minutes above 0 and at most 1440, not {raw!r}")
    return minutes * 60


# An open queue's items are read in a person's own order, seeded by the person: the items'
# random positions (48 bits) fall into STRETCHES equal stretches, which each person visits in a
# shuffled order of their own, each stretch up or down the position index as the person's seed
# says (so a fetch stays a few index reads, not a sort of every open item).
STRETCHES = 64
_SPAN = (1 << 48) // STRETCHES


def open_order(annotator_id: int) -> list[tuple[int, bool]]:
    """The order in which the person ``annotator_id`` visits the stretches of an open queue, each
    as (stretch, downwards): a shuffle seeded by the person (the same every time for them,
    another for each other person)."""
    seeded = random.Random(f"denominator open order {int(annotator_id)}")
    order = list(range(STRETCHES))
    seeded.shuffle(order)
    return [(stretch, seeded.random() < 0.5) for stretch in order]


_LOWEST, _HIGHEST = -(1 << 63), (1 << 63) - 1  # the open ends of the first and last stretches


def _stretch(position: int) -> int:
    return min(max(position // _SPAN, 0), STRETCHES - 1)


def _stretch_bounds(stretch: int) -> tuple[int | None, int | None]:
    """[low, high) of the stretch's positions; the first and last are open-ended (a position
    outside 48 bits is still in a stretch)."""
    low = None if stretch == 0 else stretch * _SPAN
    high = None if stretch == STRETCHES - 1 else (stretch + 1) * _SPAN
    return low, high


def _later(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat(timespec="microseconds")


# The newest live label of this annotator on the item: NULL when there is none or
# when the newest row is a retraction (undo), i.e. the item still needs a grade.
CURRENT_LABEL = (
    "(SELECT value FROM labels WHERE item_id = i.id AND annotator_id = :annotator "
    f"AND {live('id', 'labels')} ORDER BY id DESC LIMIT 1)"
)


# How many other people hold a current (not retracted) live label on the item ``i``.
OTHER_LABELLERS = (
    "(SELECT count(DISTINCT o.annotator_id) FROM labels o WHERE o.item_id = i.id AND o.annotator_id <> :annotator "
    f"AND o.value IS NOT NULL AND {live('o.id', 'labels')} AND o.id = (SELECT max(p.id) FROM labels p "
    f"WHERE p.item_id = o.item_id AND p.annotator_id = o.annotator_id AND {live('p.id', 'labels')}))"
)


def _rule_read(annotator_id: int, kind: str) -> tuple[str, list[Any]]:
    """The read of :meth:`Queue.queue_rule`: whether a ``kind`` item is assigned to the person, the
    newest handout's mode and labels."""
    return (
        "SELECT (SELECT 1 FROM assignments a JOIN items i ON i.id = a.item_id WHERE a.annotator_id = ? "
        "AND i.kind = ? LIMIT 1), (SELECT mode FROM handout ORDER BY id DESC LIMIT 1), "
        "(SELECT per_item FROM handout ORDER BY id DESC LIMIT 1)",
        [annotator_id, kind],
    )


def _own_lease_read(annotator_id: int, kind: str, holder: str, now: str) -> tuple[str, dict[str, Any]]:
    """The read of :meth:`Queue._own_lease`."""
    return (
        f"""SELECT l.item_id, l.expires_at, l.session FROM leases l JOIN items i ON i.id = l.item_id
           WHERE l.annotator_id = :annotator AND l.kind = :kind AND l.holder = :holder
           AND l.expires_at > :now AND {live_item("i")}
           AND (l.revisit = 1 OR {CURRENT_LABEL} IS NULL)""",
        {"annotator": annotator_id, "kind": kind, "holder": holder, "now": now},
    )


def _open_taken(annotator_id: int, kind: str, now: str, labels: int) -> tuple[str, dict[str, Any]]:
    """The read of :meth:`Queue._open_items_taken`: the open items whose last labels needed are
    on other people's screens."""
    return (
        f"""SELECT l.item_id FROM leases l JOIN items i ON i.id = l.item_id
           WHERE l.annotator_id <> :annotator AND l.kind = :kind AND l.expires_at > :now
           GROUP BY l.item_id, i.id
           HAVING count(DISTINCT l.annotator_id) + {OTHER_LABELLERS} >= {int(labels)}""",
        {"annotator": annotator_id, "kind": kind, "now": now},
    )


def _elsewhere_read(annotator_id: int, holder: str, now: str) -> tuple[str, list[Any]]:
    """The read of :meth:`Queue._leased_elsewhere`: the items the person's other tabs hold now."""
    return (
        "SELECT item_id FROM leases WHERE annotator_id = ? AND holder <> ? AND expires_at > ?",
        [annotator_id, holder, now],
    )


def _skipped_read(annotator_id: int, kind: str, source: str) -> tuple[str, dict[str, Any]]:
    """The read of :meth:`Queue.skipped_items`, over the queue's FROM/WHERE ``source``."""
    return (
        f"""SELECT s.item_id FROM skips s WHERE s.annotator_id = :annotator AND s.kind = :kind
           AND s.item_id IN (SELECT i.id {source}) ORDER BY s.created_at, s.item_id""",
        {"annotator": annotator_id, "kind": kind},
    )


def _last_position_read(annotator_id: int, kind: str, source: str) -> tuple[str, dict[str, Any]]:
    """Where in the queue (``source``) the item the person labelled last sits: its position (no
    row when it left their queue). The open handout's order goes on from there."""
    return (
        f"""SELECT i.position {source} AND i.id = (SELECT l.item_id FROM labels l JOIN items k ON k.id = l.item_id
            WHERE l.annotator_id = :annotator AND k.kind = '{kind}' ORDER BY l.id DESC LIMIT 1)""",
        {"annotator": annotator_id},
    )


def _end_lease_statement(annotator_id: int, kind: str, holder: str) -> tuple[str, list[Any]]:
    """:meth:`Queue.end_lease`'s statement: the ``holder`` tab's lease deleted."""
    return (
        "DELETE FROM leases WHERE annotator_id = ? AND kind = ? AND holder = ?",
        [annotator_id, kind, holder],
    )


def _server_leases_read(tab: TabSession, keep: str) -> tuple[str, list[Any]]:
    """The read of :meth:`Queue.release_closed`: the leases of ``tab``'s server, but the ``keep`` tab's."""
    return (
        "SELECT annotator_id, kind, holder, session FROM leases WHERE session LIKE ? AND holder <> ?",
        [f"{tab.server} %", keep],
    )


def _lease_of(row: Sequence[Any] | None) -> tuple[int, str, str | None] | None:
    """(item, expires_at, session) of a lease's row (:func:`_own_lease_read`), None for none."""
    return (int(row[0]), row[1], row[2]) if row else None


class QueueRule(NamedTuple):
    """What makes a person's queue of one kind of items (:meth:`Queue.queue_rule`)."""

    assigned: bool  # some item of the kind is assigned to them: their queue is their assignments
    mode: str  # the project's handout (:meth:`Queue.handout`)
    labels: int


class TabSession(NamedTuple):
    """Where a tab runs, for its lease (:meth:`Queue.lease_item`): ``server``, an id of the app's
    process (letters and digits); ``session``, the app's id of the tab's connection; ``alive``,
    whether a connection of this server (by its id) is still open. A lease taken by a connection
    of this server that has closed (the tab was closed) is given back at the next lease."""

    server: str
    session: str
    alive: Callable[[str], bool]

    @property
    def tag(self) -> str:
        """What the lease row records: ``server session``."""
        return f"{self.server} {self.session}"


class Waiting(NamedTuple):
    """Items of a person's queue that are on screens now and not theirs to be handed
    (:meth:`Queue.waiting`)."""

    own_tabs: int  # on other tabs of theirs
    others: int  # open items whose last places are on other people's screens
    first_back: str | None  # when the first of those leases lapses, if its tab stays idle (UTC, ISO)
    last_back: str | None  # when the last one does


class BatchProgress(NamedTuple):
    """A person's progress through their batch of one kind of items (:meth:`Queue.batch_progress`)."""

    done: int  # of total: labelled by them, or closed by other people's labels (or retired) since
    total: int  # the items in their queue when the batch began: fixed while it lasts
    labelled: int  # of done: labelled by them
    closed: int  # of done: no longer theirs to label (other people closed it, or it was retired)


class ItemTexts(NamedTuple):
    """What the labelling page shows of an item (:meth:`Queue.item_texts`): never a run, a rank, a
    score, a system name or anyone's label."""

    kind: str
    query: str | None  # a chunk item's query text
    chunk: str | None  # a chunk item's text
    has_trace: bool  # a trace or pair item's (first) trace is stored
    question: str | None
    contexts: str | None  # as stored: a JSON list of texts or chunk ids
    answer: str | None
    answer_b: str | None  # a pair item's second answer


class Queue(StoreBase):
    """Each annotator's queue of items, and the texts an item shows."""

    def _read(self, sql: str, params: dict[str, Any] | Sequence[Any]) -> Any:
        """Run a queue's statement, without its liveness tests while no import is retired
        (:func:`annotation.store.retirements.all_live`: the same rows, a statement PostgreSQL
        plans in a fraction of the time)."""
        if "import_rows" in sql and self._none_retired():
            sql = all_live(sql)
        return self.db.execute(sql, params)

    def _reads(
        self, statements: Sequence[tuple[str, dict[str, Any] | Sequence[Any]]]
    ) -> list[list[tuple[Any, ...]]]:
        """:meth:`_read` of several statements, each one's rows, in order: on PostgreSQL sent
        together, one round trip for all (a key press's lease reads, #42: each round trip waits for
        the server's process, woken from idle on a quiet machine, or for the network to a remote
        server); on SQLite one after another."""
        live = [
            (all_live(sql) if "import_rows" in sql and self._none_retired() else sql, p)
            for sql, p in statements
        ]
        at_once = getattr(self.db, "fetch_all_at_once", None)
        if at_once is not None:
            rows: list[list[tuple[Any, ...]]] = at_once(live)
            return rows
        return [self.db.execute(sql, params).fetchall() for sql, params in live]

    def _none_retired(self) -> bool:
        """Whether no import is retired now. Inside a write, read once per write: it holds the
        one write lock, so no other writer retires an import before it ends (a retirement of
        its own forgets the answer); outside, read each time."""
        memo = self.write_memo
        if memo is not None and "none_retired" in memo:
            return bool(memo["none_retired"])
        none = bool(self.db.execute(NONE_RETIRED).fetchone()[0])
        if memo is not None:
            memo["none_retired"] = none
        return none

    def handout(self) -> tuple[str, int]:
        """How the project hands items out: (mode, labels). ``open``: an item goes to whoever asks
        next, never twice to one person, until ``labels`` different people have labelled it;
        ``assigned``: only to the people it is assigned to. A person with items assigned is
        shown those in either mode. The newest ``handout`` row, else the options table's
        defaults (open, 2: so the people's own agreement, the ceiling a judge is held to, can be
        measured on every item)."""
        row = self.db.execute("SELECT mode, per_item FROM handout ORDER BY id DESC LIMIT 1").fetchone()
        if row is None:
            return default("handout_mode"), default("handout_labels")
        return str(row[0]), int(row[1])

    def set_handout(self, mode: str, labels: int, who: str) -> None:
        """Record a new handout (a new row; the newest counts)."""
        if mode not in HANDOUT_MODES:
            raise StoreError(f"handout {mode!r}; expected one of {', '.join(HANDOUT_MODES)}")
        low, high = int(option("handout_labels").minimum or 1), int(option("handout_labels").maximum or 100)
        if isinstance(labels, bool) or not isinstance(labels, int) or not low <= labels <= high:
            raise StoreError(f"labels per item {labels!r}; expected a whole number from {low} to {high}")
        if not (who or "").strip():
            raise StoreError("a handout needs the name of who set it")
        with self.write():
            self.db.execute(
                "INSERT INTO handout (mode, per_item, who, created_at) VALUES (?, ?, ?, ?)",
                [mode, labels, who.strip(), utc_now()],
            )
            self._rules_changed()

    def has_assignments(self, kind: str) -> bool:
        """Whether any ``kind`` item is assigned to anybody (else every annotator's queue
        is every item of the kind: single-user mode)."""
        return (
            self.db.execute(
                "SELECT 1 FROM assignments a JOIN items i ON i.id = a.item_id WHERE i.kind = ? LIMIT 1",
                [kind],
            ).fetchone()
            is not None
        )

    def queue_rule(self, annotator_id: int, kind: str) -> QueueRule:
        """What makes the annotator's queue of ``kind`` items, in one read: whether any ``kind``
        item is assigned to them and the project's handout
        (:meth:`handout`)."""
        rule = self._kept_rule(annotator_id, kind)
        if rule is None:
            rule = self._keep_rule(
                annotator_id, kind, self.db.execute(*_rule_read(annotator_id, kind)).fetchone()
            )
        return rule

    def _kept_rule(self, annotator_id: int, kind: str) -> QueueRule | None:
        """The rule this write read already (a label's check, then the next lease), else None."""
        memo = self.write_memo
        rule: QueueRule | None = memo.get(f"rule {annotator_id} {kind}") if memo is not None else None
        return rule

    def _keep_rule(self, annotator_id: int, kind: str, row: Sequence[Any]) -> QueueRule:
        """The rule of :func:`_rule_read`'s row, kept for the rest of the write."""
        if row[1] is None:
            rule = QueueRule(row[0] is not None, default("handout_mode"), default("handout_labels"))
        else:
            rule = QueueRule(row[0] is not None, str(row[1]), int(row[2]))
        if self.write_memo is not None:
            self.write_memo[f"rule {annotator_id} {kind}"] = rule
        return rule

    def _queue_source(self, kind: str, annotator_id: int, rule: QueueRule | None = None) -> tuple[str, str]:
        """FROM/WHERE of an annotator's queue of ``kind`` items (the annotator's id bound as
        ``:annotator``), and its order: the items assigned to them, when there are any; else,
        when the project hands items out ``open`` (:meth:`handout`), the **open** items: those
        fewer than its ``labels`` other people have labelled (plus the person's own labelled
        ones, for the progress), so a person added later gets work at once and adds a second
        opinion, and one person alone sees every item; else (``assigned``) nothing. ``rule``:
        :meth:`queue_rule`, when the caller read it already."""
        if kind not in ITEM_KINDS:
            raise StoreError(f"item kind {kind!r}; expected one of {', '.join(ITEM_KINDS)}")
        if rule is None:
            rule = self.queue_rule(annotator_id, kind)
        if rule.assigned:
            return (
                f"FROM assignments a JOIN items i ON i.id = a.item_id WHERE a.annotator_id = :annotator "
                f"AND i.kind = '{kind}' AND {live_item('i')}",
                "a.position",
            )
        if rule.mode == "open":
            return (
                f"FROM items i WHERE i.kind = '{kind}' AND {live_item('i')} AND ({CURRENT_LABEL} IS NOT NULL"
                f" OR {OTHER_LABELLERS} < {int(rule.labels)})",
                "i.position",
            )
        return f"FROM items i WHERE i.kind = '{kind}' AND 1 = 0", "i.position"

    def next_unlabelled_item(
        self,
        annotator_id: int,
        kind: str,
        skipped: Sequence[int] = (),
        rule: QueueRule | None = None,
        last: list[tuple[Any, ...]] | None = None,
    ) -> int | None:
        """The id of the next ``kind`` item in the annotator's queue that has no current label
        of theirs and is not in ``skipped``; None when there is none. In the order of their
        assignments when they have some; else, under the ``open`` handout, in an order of their
        own (:func:`open_order`); else in the items' order. ``rule``: :meth:`queue_rule`, when
        the caller read it already; ``last``: the rows of :func:`_last_position_read`, when the
        caller read them (the open handout's order starts there)."""
        if rule is None:
            rule = self.queue_rule(annotator_id, kind)
        if rule.mode == "open" and not rule.assigned:
            return self._next_open_item(annotator_id, kind, skipped, rule, last)
        return self._next_in_order(annotator_id, kind, skipped, rule)

    def _next_open_item(
        self,
        annotator_id: int,
        kind: str,
        skipped: Sequence[int],
        rule: QueueRule,
        last_rows: list[tuple[Any, ...]] | None = None,
    ) -> int | None:
        """:meth:`next_unlabelled_item` in the person's own order of the open items
        (:func:`open_order`): the rest of the stretch of the item they labelled last, then the
        stretches after it in their order, then from their first stretch (items skipped or
        undone). Each look is one stretch of the items' position index, so a fetch costs the
        same after 10 labels or 10,000."""
        source, _ = self._queue_source(kind, annotator_id, rule)
        skip = ", ".join(str(int(i)) for i in skipped)
        unlabelled = f"{CURRENT_LABEL} IS NULL {f'AND i.id NOT IN ({skip})' if skip else ''}"
        if last_rows is None:
            last_rows = self._read(*_last_position_read(annotator_id, kind, source)).fetchall()
        last = last_rows[0] if last_rows else None
        order = open_order(annotator_id)
        looks: list[tuple[int, bool, int | None]] = [(stretch, down, None) for stretch, down in order]
        if last is not None and last[0] is not None:
            here = [stretch for stretch, _ in order].index(_stretch(int(last[0])))
            looks = [(*order[here], int(last[0]))] + looks[here + 1 :] + looks[: here + 1]
        # one statement per direction, the bounds bound as parameters: PostgreSQL's client keeps
        # a statement it has run five times prepared, so its plan is not made again at each look
        statements = {
            down: f"SELECT i.id {source} AND {unlabelled} AND i.position BETWEEN :low AND :high "
            f"ORDER BY i.position{' DESC' if down else ''} LIMIT 1"
            for down in (False, True)
        }
        for stretch, down, after in looks:
            low, high = _stretch_bounds(stretch)
            lowest = _LOWEST if low is None else low
            highest = _HIGHEST if high is None else high - 1
            if after is not None:  # the rest of the stretch, past the item labelled last
                lowest, highest = (
                    (lowest, min(highest, after - 1)) if down else (max(lowest, after + 1), highest)
                )
            if lowest > highest:  # nothing left past it in its stretch
                continue
            row = self._read(
                statements[down], {"annotator": annotator_id, "low": lowest, "high": highest}
            ).fetchone()
            if row is not None:
                return int(row[0])
        return None

    def _next_in_order(
        self, annotator_id: int, kind: str, skipped: Sequence[int], rule: QueueRule
    ) -> int | None:
        """:meth:`next_unlabelled_item` in the queue's order (the person's assignments, or the
        items').

        The search starts after the item this annotator labelled last: in a session that goes
        down the queue, every item before it is labelled, so the search does not walk past them
        again (a fetch costs the same after 10 labels or 10,000). Then from the start, for
        items skipped or undone. The last label's place is a subquery of the first search (one
        read, not two; NULL when that item is not in the queue, and the search goes on from the
        start)."""
        source, order = self._queue_source(kind, annotator_id, rule)
        skip = ", ".join(str(int(i)) for i in skipped)
        unlabelled = f"{CURRENT_LABEL} IS NULL {f'AND i.id NOT IN ({skip})' if skip else ''}"
        # the subquery's own i (and a) shadow the outer ones: the last item's place in the same queue
        after_last = f"""{order} > (SELECT {order} {source} AND i.id = (
                    SELECT l.item_id FROM labels l JOIN items k ON k.id = l.item_id
                    WHERE l.annotator_id = :annotator AND k.kind = '{kind}' ORDER BY l.id DESC LIMIT 1))"""
        row = self._read(
            f"SELECT i.id {source} AND {after_last} AND {unlabelled} ORDER BY {order} LIMIT 1",
            {"annotator": annotator_id},
        ).fetchone()
        if row is None:
            row = self._read(
                f"SELECT i.id {source} AND {unlabelled} ORDER BY {order} LIMIT 1", {"annotator": annotator_id}
            ).fetchone()
        return row[0] if row else None

    def queue_progress(self, annotator_id: int, kind: str) -> tuple[int, int]:
        """(labelled, total) of the annotator's queue of ``kind`` items; labelled counts the
        items whose newest row of theirs has a value (not a retraction)."""
        source, _ = self._queue_source(kind, annotator_id)
        done, total = self._read(
            f"SELECT count({CURRENT_LABEL}), count(*) {source}", {"annotator": annotator_id}
        ).fetchone()
        return int(done), int(total)

    def batch_progress(self, annotator_id: int, kind: str) -> BatchProgress:
        """The person's progress through their **batch** of ``kind`` items: the items in their
        queue when it began (labelled ones included, as :meth:`queue_progress` counts them). Its
        total stays fixed while it lasts: an open item other people close meanwhile (or an
        item retired) counts as done, closed, not as a smaller total. A batch begins at the
        person's first count, and again when their queue gains items: a new item (a later pool,
        an import) or more items of the batch's time than it began with (a new assignment); then
        the total is their queue as it stands. Kept in the store (``batches``), so every tab and
        server of the person counts the same batch. One read; a write only when a batch begins."""
        source, _ = self._queue_source(kind, annotator_id)
        row = self.db.execute(
            "SELECT upto, total FROM batches WHERE annotator_id = ? AND kind = ?", [annotator_id, kind]
        ).fetchone()
        upto, total = (int(row[0]), int(row[1])) if row else (-1, -1)
        counts = self._read(
            f"""SELECT coalesce(sum(CASE WHEN q.id <= :upto AND q.v IS NOT NULL THEN 1 ELSE 0 END), 0),
                       coalesce(sum(CASE WHEN q.id <= :upto THEN 1 ELSE 0 END), 0),
                       coalesce(sum(CASE WHEN q.v IS NOT NULL THEN 1 ELSE 0 END), 0), count(*), max(q.id)
                FROM (SELECT i.id AS id, {CURRENT_LABEL} AS v {source}) q""",
            {"annotator": annotator_id, "upto": upto},
        ).fetchone()
        labelled, present, labelled_now, count, newest = (int(c or 0) for c in counts)
        if row is None or newest > upto or present > total:  # a new batch: the queue as it stands
            with self.write():
                self.db.execute(
                    """INSERT INTO batches (annotator_id, kind, upto, total, created_at) VALUES (?, ?, ?, ?, ?)
                       ON CONFLICT (annotator_id, kind) DO UPDATE SET upto = excluded.upto,
                       total = excluded.total, created_at = excluded.created_at""",
                    [annotator_id, kind, newest, count, utc_now()],
                )
            return BatchProgress(labelled_now, count, labelled_now, 0)
        done = total - (present - labelled)  # the batch's items still waiting for their label
        done = min(max(done, 0), total)
        labelled = min(labelled, done)
        return BatchProgress(done, total, labelled, done - labelled)

    # ------------------------------------------------------------ what an item shows

    def item_keys(self, item_id: int) -> tuple[str, str | None, str | None, str | None, str | None] | None:
        """(kind, query id, chunk id, trace id, trace B id) of the item; None when there is none."""
        keys: tuple[str, str | None, str | None, str | None, str | None] | None = self.db.execute(
            "SELECT kind, query_id, chunk_id, trace_id, trace_b_id FROM items WHERE id = ?", [item_id]
        ).fetchone()
        return keys

    def item_texts(self, item_id: int) -> ItemTexts | None:
        """What the labelling page shows of the item, in one read (:class:`ItemTexts`); None when
        there is no such item. The same texts as :meth:`query_text`, :meth:`chunk_text`,
        :meth:`trace_shown` and :meth:`trace_answer` of its keys."""
        row = self.db.execute(
            """SELECT i.kind, q.text, c.text, t.id, t.question, t.contexts, t.answer, b.answer
               FROM items i LEFT JOIN queries q ON q.id = i.query_id LEFT JOIN chunks c ON c.id = i.chunk_id
               LEFT JOIN traces t ON t.id = i.trace_id LEFT JOIN traces b ON b.id = i.trace_b_id
               WHERE i.id = ?""",
            [item_id],
        ).fetchone()
        if row is None:
            return None
        return ItemTexts(row[0], row[1], row[2], row[3] is not None, row[4], row[5], row[6], row[7])

    def chunk_texts_shown(self, chunk_ids: Sequence[str]) -> dict[str, str | None]:
        """chunk id -> text of the stored ones among ``chunk_ids`` (a trace's contexts), in one
        read per 500 ids; the same texts as :meth:`chunk_text`."""
        wanted = sorted(set(chunk_ids))
        out: dict[str, str | None] = {}
        for start in range(0, len(wanted), 500):  # within SQLite's limit of bound parameters
            batch = wanted[start : start + 500]
            marks = ", ".join("?" * len(batch))
            out.update(
                self.db.execute(f"SELECT id, text FROM chunks WHERE id IN ({marks})", batch).fetchall()
            )
        return out

    def known_items(self, kind: str, item_ids: Iterable[int]) -> set[int]:
        """The ids among ``item_ids`` that are ``kind`` items."""
        wanted = sorted({int(i) for i in item_ids})
        if not wanted:
            return set()
        if len(wanted) <= 900:  # within SQLite's limit of bound parameters
            marks = ", ".join("?" * len(wanted))
            return {
                r[0]
                for r in self.db.execute(
                    f"SELECT id FROM items WHERE kind = ? AND id IN ({marks})", [kind, *wanted]
                ).fetchall()
            }
        return {r[0] for r in self.db.execute("SELECT id FROM items WHERE kind = ?", [kind]).fetchall()}

    def query_text(self, query_id: str | None) -> str | None:
        """The query's text; None when it has none or is not stored."""
        row = self.db.execute("SELECT text FROM queries WHERE id = ?", [query_id]).fetchone()
        return row[0] if row else None

    def chunk_text(self, chunk_id: str | None) -> str | None:
        """The chunk's text; None when it has none or is not stored."""
        row = self.db.execute("SELECT text FROM chunks WHERE id = ?", [chunk_id]).fetchone()
        return row[0] if row else None

    def trace_shown(self, trace_id: str | None) -> tuple[str | None, str | None, str | None] | None:
        """(question, contexts as stored (a JSON list), answer) of the trace; None when not stored."""
        shown: tuple[str | None, str | None, str | None] | None = self.db.execute(
            "SELECT question, contexts, answer FROM traces WHERE id = ?", [trace_id]
        ).fetchone()
        return shown

    def trace_answer(self, trace_id: str | None) -> str | None:
        """The trace's answer; None when it has none or is not stored."""
        row = self.db.execute("SELECT answer FROM traces WHERE id = ?", [trace_id]).fetchone()
        return row[0] if row else None

    # ------------------------------------------------------------ leases: one item, one tab
    #
    # A person's place in the queue lives here, not in a browser session. Each tab (``holder``:
    # a random id the page keeps in its address, so a reload keeps it) leases the item it shows;
    # no other tab or server of the same person is shown a leased item. A lease ends with a label
    # or a skip (the next one is taken at the next draw) and lapses after :func:`lease_seconds`
    # without a key press in its tab. Taking an item is one write transaction: two tabs asking at
    # once are served one after the other, under the store's one-writer rule.

    def lease_item(
        self,
        annotator_id: int,
        kind: str,
        holder: str,
        *,
        ended: bool = False,
        end: bool = False,
        tab: TabSession | None = None,
    ) -> dict[str, Any] | None:
        """What the ``holder`` tab shows: ``{"item_id", "from_skips", "skips_left"}``; its own
        live lease (renewed when half gone), else the next unlabelled item of the person's queue
        that is neither skipped nor another of their tabs', else the oldest skipped item no other
        tab of theirs shows (it leaves the skipped list); None when nothing is left. ``ended``:
        the tab's lease was ended in the enclosing write (a label, a skip), so there is none to
        look for (two reads fewer on the key press's path); ``end``: as ``ended``, the tab's lease
        ended here, with the reads (:meth:`end_lease` in the same round trip). ``tab``: where the tab runs; its lease
        records it, and the leases of this server's closed tabs are given back first
        (:meth:`release_closed`)."""
        now = utc_now()
        ended = ended or end
        own = None if ended else self._own_lease(annotator_id, kind, holder, now)
        if own is not None and own[1] > _later(lease_seconds() / 2) and (tab is None or own[2] == tab.tag):
            return {"item_id": own[0], "from_skips": False, "skips_left": None}
        with self.write():
            last: list[tuple[Any, ...]] | None = None
            if ended:  # a key press: its lease reads sent at once (one round trip on PostgreSQL)
                others, skipped, last = self._lease_reads(annotator_id, kind, holder, now, tab, end=end)
                rule = self.queue_rule(annotator_id, kind)  # read by _lease_reads, kept for this write
            else:
                self.db.execute("DELETE FROM leases WHERE expires_at <= ?", [now])
                if tab is not None:
                    self.release_closed(tab, keep=holder)
                own = self._own_lease(annotator_id, kind, holder, now)
                if own is not None:
                    self._lease(annotator_id, kind, holder, own[0], revisit=None, tab=tab)
                    return {"item_id": own[0], "from_skips": False, "skips_left": None}
                others = self._leased_elsewhere(annotator_id, holder)
                rule = self.queue_rule(annotator_id, kind)  # read once for the whole lease
                if rule.mode == "open" and not rule.assigned:
                    others |= self._open_items_taken(annotator_id, kind, now, rule.labels)
                skipped = self.skipped_items(annotator_id, kind, rule)
            item_id = self.next_unlabelled_item(annotator_id, kind, sorted(set(skipped) | others), rule, last)
            from_skips = False
            taken_back = 0  # skips deleted below: the list left is known without reading it again
            if item_id is None:  # the queue is done: the skipped items come back, oldest first
                for back in skipped:
                    if back in others:
                        continue
                    self.db.execute(
                        "DELETE FROM skips WHERE annotator_id = ? AND item_id = ?", [annotator_id, back]
                    )
                    taken_back += 1
                    if self._unlabelled(annotator_id, back):
                        item_id, from_skips = back, True
                        break
            if item_id is None:
                return None
            self._lease(annotator_id, kind, holder, item_id, revisit=False, tab=tab)
        # the skips read in this write, less those it deleted (a skip's row is keyed by the person
        # and the item, and this write holds the store's one write lock)
        return {"item_id": item_id, "from_skips": from_skips, "skips_left": len(skipped) - taken_back}

    def _lease_reads(
        self, annotator_id: int, kind: str, holder: str, now: str, tab: TabSession | None, end: bool = False
    ) -> tuple[set[int], list[int], list[tuple[Any, ...]] | None]:
        """What :meth:`lease_item` reads after a tab's lease ended in the same write, sent
        together (:meth:`_reads`): the tab's lease ended first (``end``: :meth:`end_lease`), the
        lapsed leases deleted, this server's leases (for its closed tabs), the items the person's
        other tabs hold and, under the ``open`` handout, the open items others' screens close and
        where the person's last label sits in it (:func:`_last_position_read`); then the person's
        skipped items. (others, skipped, the last label's rows or None), as :meth:`lease_item`
        reads them one by one. A closed tab found gives its lease back and the reads are made
        again."""
        rule = self.queue_rule(annotator_id, kind)
        open_items = rule.mode == "open" and not rule.assigned
        source, _ = self._queue_source(kind, annotator_id, rule)
        statements: list[tuple[str, dict[str, Any] | Sequence[Any]]] = []
        if end:  # one round trip fewer than end_lease's own
            statements.append(_end_lease_statement(annotator_id, kind, holder))
        statements += [
            ("DELETE FROM leases WHERE expires_at <= ?", [now]),
            _elsewhere_read(annotator_id, holder, now),
            _skipped_read(annotator_id, kind, source),
        ]
        if open_items:
            statements.append(_open_taken(annotator_id, kind, now, rule.labels))
            statements.append(_last_position_read(annotator_id, kind, source))
        if tab is not None:  # this server's leases, whose tabs may have closed
            statements.append(_server_leases_read(tab, holder))
        rows = self._reads(statements)[1 if end else 0 :]
        _, elsewhere, skips, *more = rows
        taken, last = (more[0], more[1]) if open_items else ([], None)
        if tab is not None and self.release_closed(tab, keep=holder, rows=more[-1]):
            return self._lease_reads(annotator_id, kind, holder, now, None)  # read again without them
        others = {int(r[0]) for r in elsewhere} | {int(r[0]) for r in taken}
        return others, [int(r[0]) for r in skips], last

    def release_closed(
        self, tab: TabSession, keep: str = "", rows: Sequence[Sequence[Any]] | None = None
    ) -> int:
        """Give back the leases taken by connections of ``tab.server`` that have closed (``tab.alive``
        says no), but the ``keep`` tab's (a reload: a new connection, the same tab); how many.
        Leases of other servers are left to lapse (this server cannot see their connections).
        ``rows``: those leases, when the caller read them (``session LIKE '<server> %'``, holder
        not ``keep``)."""
        if rows is None:
            rows = self.db.execute(*_server_leases_read(tab, keep)).fetchall()
        closed = [row for row in rows if not tab.alive(str(row[3]).partition(" ")[2])]
        if closed:
            with self.write():
                for annotator_id, kind, holder, session in closed:
                    self.db.execute(
                        "DELETE FROM leases WHERE annotator_id = ? AND kind = ? AND holder = ? AND session = ?",
                        [annotator_id, kind, holder, session],
                    )
        return len(closed)

    def waiting(self, annotator_id: int, kind: str, holder: str) -> Waiting:
        """The items of the person's ``kind`` queue that wait on other screens (what "nothing
        left" is short of): unlabelled by them and leased by another of their tabs, or, under the
        ``open`` handout, open items whose last places other people's tabs hold; with when the
        first and the last of those leases lapse if their tabs stay idle."""
        now = utc_now()
        rule = self.queue_rule(annotator_id, kind)
        source, _ = self._queue_source(kind, annotator_id, rule)
        mine = self._read(
            f"""SELECT l.item_id, l.expires_at FROM leases l WHERE l.annotator_id = :annotator AND l.kind = :kind
               AND l.holder <> :holder AND l.expires_at > :now
               AND l.item_id IN (SELECT i.id {source} AND {CURRENT_LABEL} IS NULL)""",
            {"annotator": annotator_id, "kind": kind, "holder": holder, "now": now},
        ).fetchall()
        own = {int(item) for item, _ in mine}
        theirs: set[int] = set()
        times = [str(at) for _, at in mine]
        if rule.mode == "open" and not rule.assigned:
            theirs = self._open_items_taken(annotator_id, kind, now, rule.labels) - own
            theirs = {item for item in theirs if self._unlabelled(annotator_id, item)}
            if theirs:
                marks = ", ".join(str(int(i)) for i in sorted(theirs))
                times += [
                    str(r[0])
                    for r in self.db.execute(
                        f"""SELECT min(expires_at) FROM leases WHERE annotator_id <> ? AND kind = ?
                           AND expires_at > ? AND item_id IN ({marks}) GROUP BY item_id""",
                        [annotator_id, kind, now],
                    ).fetchall()
                ]
        return Waiting(len(own), len(theirs), min(times, default=None), max(times, default=None))

    def hold_item(
        self,
        annotator_id: int,
        kind: str,
        holder: str,
        item_id: int,
        *,
        revisit: bool,
        tab: TabSession | None = None,
    ) -> None:
        """Put ``item_id`` on the ``holder`` tab's screen (an item from "my work", or one just
        undone): it leaves the skipped list; ``revisit`` lets a labelled item be labelled again
        (a past label changed); ``tab`` as :meth:`lease_item` records it."""
        with self.write():
            self.db.execute(
                "DELETE FROM skips WHERE annotator_id = ? AND item_id = ?", [annotator_id, item_id]
            )
            self._lease(annotator_id, kind, holder, item_id, revisit=revisit, tab=tab)

    def skip_item(self, annotator_id: int, kind: str, holder: str, item_id: int) -> None:
        """The ``holder`` tab skips ``item_id``: on the person's skipped list, its lease ended."""
        with self.write():
            self.db.execute(
                "INSERT OR IGNORE INTO skips (annotator_id, item_id, kind, created_at) VALUES (?, ?, ?, ?)",
                [annotator_id, item_id, kind, utc_now()],
            )
            self.end_lease(annotator_id, kind, holder)

    def end_lease(self, annotator_id: int, kind: str, holder: str) -> None:
        """The ``holder`` tab's lease ends (its item was labelled or skipped)."""
        with self.write():
            self.db.execute(*_end_lease_statement(annotator_id, kind, holder))

    def may_label(self, annotator_id: int, kind: str, holder: str, item_id: int) -> bool:
        """Whether a key press in the ``holder`` tab may label ``item_id`` (:meth:`label_refusal`
        says None). Called inside the label's own write: two tabs cannot both pass."""
        return self.label_refusal(annotator_id, kind, holder, item_id) is None

    def label_refusal(self, annotator_id: int, kind: str, holder: str, item_id: int) -> str | None:
        """None when a key press in the ``holder`` tab may label ``item_id``: the tab holds it (and,
        under the ``open`` handout, other people did not close it meanwhile: a tab put on a skipped
        item from a stale list); or
        its lease lapsed and the item is still one the person would be handed now (no other tab of
        theirs holds it, they have not labelled it since, and it is still in their queue: under the
        ``open`` handout, other people's labels and live leases on it stay below the handout's
        labels, so a late key press never makes a third label where two were wanted). Else why not:
        ``"tab"`` (another tab of the person has it, or labelled it) or ``"closed"`` (the item went
        to the other people it needed meanwhile). Called inside the label's own write: the check
        and the label are one transaction."""
        now = utc_now()
        rule = self._kept_rule(annotator_id, kind)
        if rule is None:  # the tab's lease and the person's rule (the next lease reads it too), at once
            own_rows, rule_rows = self._reads(
                [_own_lease_read(annotator_id, kind, holder, now), _rule_read(annotator_id, kind)]
            )
            own = _lease_of(own_rows[0] if own_rows else None)
            rule = self._keep_rule(annotator_id, kind, rule_rows[0])
        else:
            own = self._own_lease(annotator_id, kind, holder, now)
        if own is not None and own[0] == item_id:  # the tab's own, unless others closed it meanwhile
            if rule.mode != "open" or rule.assigned:
                return None
            source, _ = self._queue_source(kind, annotator_id, rule)
            queued = self._read(
                f"SELECT 1 {source} AND i.id = :item", {"annotator": annotator_id, "item": item_id}
            )
            return None if queued.fetchone() is not None else "closed"
        if item_id in self._leased_elsewhere(annotator_id, holder, now):
            return "tab"
        if not self._unlabelled(annotator_id, item_id):
            return "tab"
        source, _ = self._queue_source(kind, annotator_id, rule)
        queued = self._read(
            f"SELECT 1 {source} AND i.id = :item", {"annotator": annotator_id, "item": item_id}
        )
        if queued.fetchone() is None:
            return "closed"
        if (
            rule.mode == "open"
            and not rule.assigned
            and item_id in self._open_items_taken(annotator_id, kind, now, rule.labels)
        ):
            return "closed"
        return None

    def skipped_items(self, annotator_id: int, kind: str, rule: QueueRule | None = None) -> list[int]:
        """The person's skipped ``kind`` items still in their queue, oldest skip first: an open
        item other people closed meanwhile (the handout's labels reached) is not one of them, so a
        skip never takes an item past its labels (a skip stays: should a label be taken back, the
        item is theirs to label again). ``rule``: :meth:`queue_rule`, when the caller read it."""
        source, _ = self._queue_source(kind, annotator_id, rule)
        rows = self._read(*_skipped_read(annotator_id, kind, source)).fetchall()
        return [int(r[0]) for r in rows]

    def _own_lease(
        self, annotator_id: int, kind: str, holder: str, now: str
    ) -> tuple[int, str, str | None] | None:
        """(item, expires_at, session) of the tab's live lease, when its item still wants this
        person's label (or the lease is a revisit of a past label)."""
        row = self._read(*_own_lease_read(annotator_id, kind, holder, now)).fetchone()
        return _lease_of(row)

    def _leased_elsewhere(self, annotator_id: int, holder: str, now: str | None = None) -> set[int]:
        """The items the person's other tabs hold now."""
        rows = self.db.execute(*_elsewhere_read(annotator_id, holder, now or utc_now())).fetchall()
        return {int(r[0]) for r in rows}

    def _open_items_taken(self, annotator_id: int, kind: str, now: str, labels: int) -> set[int]:
        """Open items whose last labels needed are on other people's screens: their labellers
        and the people leasing them reach ``labels`` (with 2, a third person is not shown them)."""
        rows = self._read(*_open_taken(annotator_id, kind, now, labels)).fetchall()
        return {int(r[0]) for r in rows}

    def _unlabelled(self, annotator_id: int, item_id: int) -> bool:
        row = self._read(
            f"SELECT {CURRENT_LABEL} IS NULL FROM items i WHERE i.id = :item",
            {"annotator": annotator_id, "item": item_id},
        ).fetchone()
        return bool(row and row[0])

    def _lease(
        self,
        annotator_id: int,
        kind: str,
        holder: str,
        item_id: int,
        *,
        revisit: bool | None,
        tab: TabSession | None = None,
    ) -> None:
        """The tab's lease on ``item_id`` from now for :func:`lease_seconds` (``revisit`` None:
        as it was), recording where the tab runs (``tab`` None: as it was)."""
        flag = "leases.revisit" if revisit is None else str(int(revisit))
        session = "leases.session" if tab is None else "excluded.session"
        self.db.execute(
            f"""INSERT INTO leases (annotator_id, kind, holder, item_id, revisit, expires_at, session)
               VALUES (?, ?, ?, ?, {0 if revisit is None else int(revisit)}, ?, ?)
               ON CONFLICT (annotator_id, kind, holder) DO UPDATE SET item_id = excluded.item_id,
               revisit = {flag}, expires_at = excluded.expires_at, session = {session}""",
            [annotator_id, kind, holder, item_id, _later(lease_seconds()), None if tab is None else tab.tag],
        )
