"""Denominator: the top of the layers.

- :mod:`denominator.cli`: the ``denominator`` command, which groups the three command lines
  (``python -m annotation|judge|calibration``) and runs ``demo``;
- :mod:`denominator.demo`: the demo data set (``denominator demo``), the one module
  that builds with every package.

``annotation`` is at the bottom (types, formats, the store, labelling); ``calibration`` above
it; ``judge`` above both (judge -> calibration -> annotation); the faces (``ui.py``,
``__main__.py``, ``app.py``) and this package on top.
"""
