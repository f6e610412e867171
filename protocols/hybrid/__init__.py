"""Hybrid-ID3 — Teng & Du, *A Hybrid Multi-Group Privacy-Preserving Approach for Building
Decision Trees*: multi-group randomized response
(:mod:`~protocols.hybrid.randomized_response`), the tree with its baselines
(:mod:`~protocols.hybrid.hybrid_id3`), what Alice and Bob settle around it
(:mod:`~protocols.hybrid.agreement`) and the classification of records held vertically
(:mod:`~protocols.hybrid.classify`)."""
