"""mpc — the runtime of the framework: parties, transport, codec, keys, ciphers, metrics.

The public surface::

    from mpc import Party, load_config, ProtocolError, ...
"""

from mpc.crypto.commutative import MODP_2048, MODP_3072, CommutativeKey, SafePrimeGroup
from mpc.errors import (
    AuthenticationError,
    ConfigError,
    MPCError,
    PeerAborted,
    PeerError,
    PeerTimeout,
    ProtocolError,
)
from mpc.runtime.config import DeploymentConfig, PartyConfig, load_config
from mpc.runtime.metrics import Ledger, Metrics
from mpc.runtime.party import Party
from mpc.runtime.transport import InMemoryNetwork, Transport, ZmqTransport

__all__ = [
    "MODP_2048",
    "MODP_3072",
    "AuthenticationError",
    "CommutativeKey",
    "ConfigError",
    "DeploymentConfig",
    "InMemoryNetwork",
    "Ledger",
    "MPCError",
    "Metrics",
    "Party",
    "PartyConfig",
    "PeerAborted",
    "PeerError",
    "PeerTimeout",
    "ProtocolError",
    "SafePrimeGroup",
    "Transport",
    "ZmqTransport",
    "load_config",
]
__version__ = "0.1.0"
