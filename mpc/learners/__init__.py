"""The plain (non-private) learners every private learner must match, and their tools.

* :mod:`mpc.learners.tree` — the tree (nodes, leaves, splits), rendering and JSON;
* :mod:`mpc.learners.id3` — ID3 (information gain, the shared tie-breaking);
* :mod:`mpc.learners.c45` — C4.5 (gain ratio, continuous splits, pruning);
* :mod:`mpc.learners.evaluation` — splits, cross-validation, accuracy, confusion matrices;
* :mod:`mpc.learners.model_file` — saved models: versioned JSON parts bound by digests.
"""
