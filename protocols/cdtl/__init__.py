"""Collaborative decision tree learning on outsourced anatomized data — Mancuhan & Clifton,
*Decision Tree Classification on Outsourced Data*: anatomization
(:mod:`~protocols.cdtl.anatomization`), its tables and their wire form
(:mod:`~protocols.cdtl.tables`), the joins (:mod:`~protocols.cdtl.joins`), the encrypted join
key (:mod:`~protocols.cdtl.eseq`), the protocol and its messages (:mod:`~protocols.cdtl.cdtl`),
the CDBS (Figure 1, :mod:`~protocols.cdtl.cdbs`, its store :mod:`~protocols.cdtl.store`),
``FindBDTLeaf`` (Figure 2, :mod:`~protocols.cdtl.find_leaf`) and the client (Figure 3,
:mod:`~protocols.cdtl.client`)."""
