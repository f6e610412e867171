"""What a system's plan hands to the launcher, and a toy system's private input file.

The system modules (``parties/*_system.py``) import from here, and :mod:`parties.systems`
imports them: the imports run one way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mpc.deployment.launcher import PartySpec
from mpc.errors import ConfigError
from mpc.runtime.config import PartyConfig

__all__ = ["Plan", "load_party_data"]


@dataclass(frozen=True)
class Plan:
    parties: list[PartySpec]
    params: dict[str, Any] = field(default_factory=dict)
    #: launcher-side state for ``finish`` (never sent to a party)
    context: dict[str, Any] = field(default_factory=dict)


def load_party_data(me: PartyConfig) -> dict[str, Any]:
    """Read this party's private input file (JSON object)."""
    if me.data is None:
        raise ConfigError(f"party {me.name!r} has no `data` file in the deployment")
    try:
        data = json.loads(me.data.read_text())
    except FileNotFoundError:
        raise ConfigError(f"party {me.name!r}: data file {me.data} does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"party {me.name!r}: data file {me.data} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"party {me.name!r}: data file {me.data} must hold a JSON object")
    return data
