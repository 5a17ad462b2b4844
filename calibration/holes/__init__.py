"""The holes family (#30, #41): the chunks of a run's top k that the judgments do not grade, filled
by a judge, and the metric corrected by people's labels on a random sample of queries.

- :mod:`calibration.holes.scoring`: find the holes, score a run with them filled, the corrected
  mean and its interval (pure: numpy and scipy; no IO);
- :mod:`calibration.holes.interval`: the score interval that widens the corrected t interval (pure);
- :mod:`calibration.holes.files`: the hole sample written as golden.yaml's ``sampling`` section and
  checked when read back, and a run scored with a judge's labels on its holes, corrected by the
  sample (``metrics|compare|check --judge-labels [--hole-sample]``);
- :mod:`calibration.holes.streamed`: ``metrics --judge-labels`` over a run file read in pieces, a
  batch of whole queries scored at a time;
- :mod:`calibration.holes.holes_text`: how the holes and the judge-filled figures are said (pure).

Finding them is :func:`calibration.actions.holes` (``python -m calibration holes``, its face
:mod:`calibration.holes_cli`). Beside this family: the sample file's reader
(:mod:`annotation.hole_sample`), its holes as items to label (:mod:`annotation.hole_pool`,
``annotation pool --holes``) and as items a judge grades (:mod:`judge.holes`, ``judge grade --holes``).
"""
