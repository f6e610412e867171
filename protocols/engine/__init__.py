"""The engine of computing on additive shares: what every protocol that computes on shares
has in common (drawn on the architecture page, docs/architecture.md).

* :mod:`~protocols.engine.ring`: the one ring type, ``Z_{2^K}`` for ``K`` 16, 32, 64 or a
  multiple of 64;
* :mod:`~protocols.engine.preprocessing`: the one registry of where correlated randomness
  comes from (:data:`~protocols.engine.preprocessing.PREPROCESSING`: a dealer, a third site,
  oblivious transfer), with :mod:`~protocols.engine.dealing` and
  :mod:`~protocols.engine.ot_dealing` behind it;
* :mod:`~protocols.engine.triples`: Beaver's triples as two parties consume them, a pool per
  ring;
* :mod:`~protocols.engine.session`: a session over shares, whose circuits
  (:mod:`~protocols.engine.circuits`) are budgeted by a dry run of the same code;
* :mod:`~protocols.engine.opening`: the one door through which two parties open what they
  computed;
* :mod:`~protocols.engine.spill`: a party's own arrays on its own disk between uses (a site's
  rows in ranges, one range in memory at a time).
"""
