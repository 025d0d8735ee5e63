"""The steps of one run, one module per phase; ``collector.runner.execute`` calls them in order.

* ``state``: the options and the state the phases share (``Run``);
* ``capture``: warnings, compile counters and failure records used by several phases;
* ``setup``: ``run_start``, ``environment``, the ``plan`` and the weights artifact;
* ``reference``: inputs and reference outputs per shape, saved as artifacts;
* ``cells``: every inference cell, correctness, compile facts and operators;
* ``training_cells``: training cells, step by step against the reference run;
* ``timings``: warm repetitions of passing cells and the cold first calls;
* ``profiles``: one profiler trace per shape when asked.
"""
