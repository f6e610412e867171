"""Cryptographic primitives, network-free and unit-tested alone.

* :mod:`mpc.crypto.commutative` — Pohlig-Hellman commutative encryption in safe-prime groups;
* :mod:`mpc.crypto.curve25519` — X25519 with Elligator2 hashing (the PSI-CA cipher);
* :mod:`mpc.crypto.paillier` — Paillier with gmpy2;
* :mod:`mpc.crypto.sealed` — AES-GCM sealing of stored values, associated data required.

Randomness comes only from :mod:`secrets` / the OS.
"""
