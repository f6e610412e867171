"""Oblivious transfer with no third party: base OTs on Curve25519, IKNP extension, correlated
OTs, Gilboa products and Beaver triples (:mod:`~protocols.ot.oblivious_transfer`), and
products of one-hot data by OT (:mod:`~protocols.ot.one_hot`)."""
