"""PPID3 — Vaidya & Clifton, *Privacy-Preserving Decision Trees over Vertically Partitioned
Data*: IsREmpty (Algorithm 2, :mod:`~protocols.ppid3.is_r_empty`), the counts of Algorithms
3-6 (:mod:`~protocols.ppid3.distribution_counts`), the tree node by node (Algorithm 7,
:mod:`~protocols.ppid3.ppid3`), classifyInstance (Algorithm 8,
:mod:`~protocols.ppid3.classify_instance`), and the level driver
(:mod:`~protocols.ppid3.levels`) that computes every count of a tree level on additive
shares, its randomness dealt by a helper (:mod:`~protocols.engine.dealing`) or made by
oblivious transfer (:mod:`~protocols.engine.ot_dealing`)."""
