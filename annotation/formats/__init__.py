"""The exchange formats: every file Denominator reads or writes, one module per format or concern.
Import a name from the module that defines it; the types the readers build and the errors they
raise (:class:`~annotation.model.Qrels`, :class:`~annotation.model.Run`, the
:class:`~annotation.model.FormatError` family) live in :mod:`annotation.model`, which does no IO.

Every reader is strict: bad input raises a :class:`~annotation.model.FormatError` subclass whose
message names the file, the line and the field and says what was expected. Nothing is coerced
silently ("001" stays "001": ids are text). Lines end at LF (CRLF is fine); a leading UTF-8 byte
order mark is dropped.

The formats:

- :mod:`~annotation.formats.trec`: TREC qrels and TREC runs, as trec_eval reads them;
  :mod:`~annotation.formats.columnar` their Arrow fast path (and the run read in pieces);
- :mod:`~annotation.formats.rankings`: JSONL rankings, ``{"query_id", "ranking"}`` a line;
- :mod:`~annotation.formats.golden`: golden.yaml, both shapes, its ``sampling`` and
  ``provenance`` sections, the writer and ``DEFAULT_GRADE_SCALE``;
- :mod:`~annotation.formats.by_extension`: ``read_judgments`` (golden.yaml or qrels) and
  ``read_ranked`` (JSONL rankings or a TREC run), the format chosen by the file's name;
- :mod:`~annotation.formats.records`: corpus, queries and traces, and the text keys that find
  two chunks with the same text;
- :mod:`~annotation.formats.csv_tables`: the CSV tables of ``agree``, ``position`` and ``ppi``;
- :mod:`~annotation.formats.beir`: BEIR folders, and a zipped one unpacked within limits;
- :mod:`~annotation.formats.chunks`: chunks files (where each chunk comes from: its document and
  character offsets) and the documents they cut (#44);
- :mod:`~annotation.formats.chroma`: Chroma's chunking-evaluation questions, read as evidence spans.

What they stand on:

- :mod:`annotation.ids`: the id rule's characters (no whitespace, control or format character in
  an id), which :mod:`~annotation.formats.textio` checks and the text outputs escape;
- :mod:`~annotation.formats.textio`: bytes, lines and texts checked (UTF-8, NUL, lone CR,
  trec_eval's whitespace and numbers), the size limits, the checks of an id a TREC writer takes;
- :mod:`~annotation.formats.json_lines`: strict JSON lines, the one parser of every JSONL reader;
- :mod:`~annotation.formats.plain_yaml`: YAML read safely (no alias, tag or deep nesting, each
  key once): golden.yaml and the policy file;
- :mod:`~annotation.formats.atomic`: atomic writes, never through a link.

The family imports nothing of the store, the workflows or the faces (``tests/test_structure.py``).
"""
