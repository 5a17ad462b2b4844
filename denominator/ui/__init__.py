"""The app's pages, one module each, every one a thin face over the packages' actions (#41: the
Streamlit faces in one place; not named ``pages/``, which Streamlit would read as its own multipage folder).

- :mod:`denominator.ui.label`: Label chunks, Label traces, Compare answers (the labelling pages);
- :mod:`denominator.ui.boundary`: the pages' one error boundary;
- :mod:`denominator.ui.browse`: the admins' view of every label; :mod:`denominator.ui.data`: Data
  (people, pools, imports and exports), with :mod:`denominator.ui.imports` its imports;
- :mod:`denominator.ui.metrics`: Metrics and audit, with :mod:`denominator.ui.metrics_data` (what it
  scores), :mod:`denominator.ui.holes` (its Holes section) and :mod:`denominator.ui.check` (its check
  and history);
- :mod:`denominator.ui.review`: Calibration review, with :mod:`denominator.ui.plan` (its plan of the
  labelling);
- :mod:`denominator.ui.judge`: Judge.

``denominator/app.py`` (and the checkout's ``app.py``) gives them to ``st.navigation``.
"""
