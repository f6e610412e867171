"""The protocols, grouped by paper and by building block; each module states what it reveals
to whom.

* :mod:`protocols.primitives` — building blocks several papers use: secure sum,
  set-intersection cardinality, secure dot products, record alignment;
* :mod:`protocols.ot` — oblivious transfer and the products it makes, with no third party;
* :mod:`protocols.ppid3` — Vaidya & Clifton's PPID3: IsREmpty (Algorithm 2), the counts
  (Algorithms 3-6), the tree (Algorithm 7), classifyInstance (Algorithm 8), and the level
  driver that computes a whole tree level's counts on shares;
* :mod:`protocols.hybrid` — Teng & Du's Hybrid-ID3: randomized response, the tree,
  classification of vertically held records;
* :mod:`protocols.cdtl` — Mancuhan & Clifton's collaborative learning on outsourced
  anatomized data: anatomization, its tables and joins, the CDBS and the client.
"""
