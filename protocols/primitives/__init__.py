"""Building blocks shared by the learners: secure sum
(:mod:`~protocols.primitives.secure_sum`), set-intersection cardinality by commutative
encryption (:mod:`~protocols.primitives.psi_ca`), secure dot products with a commodity server
or Paillier (:mod:`~protocols.primitives.dot_product`) and record alignment of vertically
partitioned sites (:mod:`~protocols.primitives.record_alignment`)."""
