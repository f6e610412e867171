"""The exceptions of the framework, in one hierarchy.

::

    MPCError                      anything this framework raises on purpose
     ├── ConfigError              a deployment file, key file, data file or parameter is wrong
     │    └── InputError          a party's own input is wrong, found after the handshake:
     │                            its peers are told only a public description
     ├── ProtocolError            a message broke the contract (malformed, oversized, unknown
     │                            type, wrong version, unexpected sender) or a protocol
     │                            invariant failed
     ├── AuthenticationError      a key is missing or malformed, or a peer was refused
     └── PeerError                a peer cannot take part any more; carries ``peer`` and ``step``
          ├── PeerTimeout         the peer stayed silent past the receive deadline
          ├── PeerLost            the connection to the peer broke and did not come back
          │                       (process died, link cut), or the peer left early
          ├── PeerMisbehaved      the peer sent what no honest party sends (a flood beyond
          │                       the buffer bounds, a message on a link that carries none,
          │                       an invalid curve point)
          └── PeerAborted         the peer (or a party that saw a failure) broadcast an abort

Every message says what was expected, what was received and what to do about it. A party
that stops on an error tells its peers why in public words only: an error's ``public``
message, written to be shared (``InputError`` always has one; any error may), or the
runtime's own words about a peer; any other error is named by its type alone, since its
message may quote what the party holds.
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "ConfigError",
    "InputError",
    "MPCError",
    "PeerAborted",
    "PeerError",
    "PeerLost",
    "PeerMisbehaved",
    "PeerTimeout",
    "ProtocolError",
]


class MPCError(Exception):
    """Base class of every error the framework raises on purpose. ``public``, if given, is
    what the party's peers may be told of it (the module docstring)."""

    def __init__(self, message: str = "", *, public: str | None = None) -> None:
        super().__init__(message)
        self.public = public


class ConfigError(MPCError):
    """A configuration value, input file or parameter is invalid (raised before any protocol)."""


class InputError(ConfigError):
    """A party's own input (its data file, its saved model) is wrong, found once the run has
    started. ``str()`` is the full message for the party itself, which may quote its private
    data (a repeated record id, a value); ``public`` is what its peers are told in the abort
    notice (what is wrong, never a value of the data)."""

    def __init__(self, message: str, *, public: str) -> None:
        super().__init__(message, public=public)
        self.public: str = public


class ProtocolError(MPCError):
    """A message or protocol step violated the contract."""


class AuthenticationError(MPCError):
    """A CurveZMQ key is missing or malformed, or a peer was refused."""


class PeerError(MPCError):
    """A peer can no longer take part. ``peer`` names it, ``step`` the protocol step."""

    def __init__(self, message: str, *, peer: str, step: str) -> None:
        super().__init__(message)
        self.peer = peer
        self.step = step


class PeerTimeout(PeerError):
    """Nothing arrived from ``peer`` for ``step`` within the deadline."""


class PeerLost(PeerError):
    """The connection to ``peer`` is gone (or it finished and left) while ``step`` needed it."""


class PeerMisbehaved(PeerError):
    """``peer`` sent, at ``step``, what the protocol never sends; the run ends blaming it."""


class PeerAborted(PeerError):
    """``origin`` broadcast an abort; ``peer`` is the party it blames."""

    def __init__(self, message: str, *, peer: str, step: str, origin: str) -> None:
        super().__init__(message, peer=peer, step=step)
        self.origin = origin
