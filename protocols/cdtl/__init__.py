"""Collaborative decision tree learning on outsourced anatomized data — Mancuhan & Clifton,
*Decision Tree Classification on Outsourced Data*: anatomization
(:mod:`~protocols.cdtl.anatomization`), its tables and their wire form
(:mod:`~protocols.cdtl.tables`), the joins (:mod:`~protocols.cdtl.joins`), the encrypted join
key (:mod:`~protocols.cdtl.eseq`), and the CDBS and client of Figures 1-3
(:mod:`~protocols.cdtl.cdtl`)."""
