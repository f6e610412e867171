"""The engine of computing on additive shares: what every protocol that computes on shares
has in common. Today: the one door through which two parties open what they computed
(:mod:`~protocols.engine.opening`)."""
