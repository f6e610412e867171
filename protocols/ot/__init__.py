"""Oblivious transfer between two parties, extended cheaply, and the products it makes, with no
third party. Semi-honest security: both parties follow the protocol; each learns nothing
beyond its own output and the sizes (numbers of OTs, products, triples) that the messages
show.

* :mod:`protocols.ot.base_ot` — 128 base OTs (Chou & Orlandi) on Curve25519;
* :mod:`protocols.ot.iknp` — OT extension: sessions, random and correlated OTs;
* :mod:`protocols.ot.softspoken` — SoftSpokenOT's small-field VOLE, which makes the
  extension's correlation with ``κ/k`` bits sent per OT (IKNP's ``κ`` at ``k = 1``);
* :mod:`protocols.ot.gilboa` — Gilboa products over ``Z_{2^64}`` and Beaver triples;
* :mod:`protocols.ot.vector_ot` — correlated OTs of vectors over ``Z_{2^16}``,
  ``Z_{2^32}`` or ``Z_{2^64}``, products of one-hot data and ring products;
* :mod:`protocols.ot.one_hot` — products of one party's one-hot data, fixed for a session,
  and the other party's vectors;
* :mod:`protocols.ot.checks` — the checks every message of these protocols goes through.

The symmetric primitives (PRG, correlation-robust hash, bit transpose) are in
:mod:`mpc.crypto.prg`, the curve arithmetic in :mod:`mpc.crypto.montgomery`.

What each party learns (ledger, the same entries at both parties, sizes only): ``ot/base``
(``ots``: the number of base OTs; ``k``: the small field's width), ``ot/random`` and
``ot/correlated`` (``ots``),
``ot/multiply`` (``products``), ``ot/beaver`` (``triples``), each with ``peer`` and this
party's ``role``. Nothing else a party receives depends on the other's inputs: ``A`` is a
fresh random point, each ``B`` a uniform point whatever the choice, each punctured-seed sum
by a base OT's pad or a seed the extension sender lacks, each row ``u_i`` of the matrix by
the expansion of the one seed of its block the extension sender lacks, and each ``τ_j`` by
``H(j, t_j ⊕ s)``, which the receiver cannot compute without ``s``. Outputs (keys, messages,
shares) are randomness or shares, not opened values.

Semi-honest only. An actively cheating extension receiver could send a ``u`` whose columns
disagree and learn bits of ``s`` (Keller, Orsini & Scholl, CRYPTO 2015, add the check that
stops it); an actively cheating A in :func:`ot_multiply` could use correlations that are not
``a 2^k`` and shift the product. Neither is defended against here.

Randomness: every scalar, sign, choice bit and share comes from :mod:`secrets` (the
OS generator) or an AES-CTR keystream keyed from it; never a seeded or statistical generator.
Every function of a session must be called in the same order at both parties (the batch
numbers and tags follow that order).
"""
