"""Deployment file and key validation: errors name the field and say why."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from mpc.errors import AuthenticationError, ConfigError
from mpc.runtime.config import load_config
from mpc.runtime.keys import load_public_key, load_secret_key, write_keypair

GOOD = """
[deployment]
timeout = 5
[protocol]
name = "secure-sum"
[protocol.params]
modulus = "18446744073709551616"
[[party]]
name = "alice"
role = "site"
endpoint = "tcp://127.0.0.1:6001"
public_key = "keys/alice.public"
[[party]]
name = "bob"
role = "site"
endpoint = "tcp://127.0.0.1:6002"
bind = "tcp://*:6002"
public_key = "keys/bob.public"
data = "bob.json"
columns = ["age", "income"]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "deployment.toml"
    path.write_text(text)
    return path


def test_a_good_file_loads(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, GOOD))
    assert cfg.names == ["alice", "bob"]
    assert cfg.timeout == 5.0 and not cfg.insecure
    bob = cfg.party("bob")
    assert bob.bind == "tcp://*:6002" and bob.columns == ("age", "income")
    assert bob.data == tmp_path / "bob.json"
    assert cfg.party("alice").bind == "tcp://127.0.0.1:6001"
    assert int(cfg.params["modulus"]) == 2**64
    assert cfg.monitor_key is None
    with_monitor = GOOD.replace("timeout = 5", 'timeout = 5\nmonitor_key = "keys/monitor.public"')
    assert (
        load_config(write(tmp_path, with_monitor)).monitor_key == tmp_path / "keys/monitor.public"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("timeout = 5", "timeout = -1"), "deployment.timeout must be in (0, 86400]"),
        (("timeout = 5", 'timeout = "soon"'), "deployment.timeout: expected a number"),
        (('name = "bob"', 'name = "alice"'), "duplicate party name 'alice'"),
        (('name = "bob"', 'name = "Bob!"'), "must match"),
        (("tcp://127.0.0.1:6002", "tcp://127.0.0.1:6001"), "is used by another party"),
        (("tcp://127.0.0.1:6002", "udp://x"), "party 'bob'.endpoint: expected 'tcp://HOST:PORT'"),
        (("tcp://127.0.0.1:6002", "tcp://h:70000"), "PORT <= 65535"),
        (('public_key = "keys/bob.public"\n', ""), "party 'bob'.public_key: required"),
        (('columns = ["age", "income"]', 'colums = ["age"]'), "unknown fields ['colums']"),
        (('name = "secure-sum"', ""), "protocol.name: expected"),
        (("[deployment]", "[deploy]\n[deployment]"), "unknown top-level tables ['deploy']"),
        (("timeout = 5", "timeout = 5\nmax_frame_bytes = 10"), "max_frame_bytes must be"),
        (
            ("timeout = 5", "timeout = 5\nmonitor = 1"),
            "unknown fields in [deployment]: ['monitor']",
        ),
        (
            ("timeout = 5", "timeout = 5\nmonitor_key = 1"),
            "deployment.monitor_key: expected a file",
        ),
    ],
)
def test_bad_files_name_the_field(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    old, new = change
    assert old in GOOD
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, GOOD.replace(old, new, 1)))
    assert message in str(info.value)
    assert str(tmp_path) in str(info.value)


def test_a_single_party_is_refused(tmp_path: Path) -> None:
    text = GOOD[: GOOD.index('[[party]]\nname = "bob"')]
    with pytest.raises(ConfigError, match="at least 2 parties"):
        load_config(write(tmp_path, text))


def test_missing_and_broken_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "[[party]\n"))


def test_insecure_deployments_need_no_keys(tmp_path: Path) -> None:
    text = GOOD.replace("timeout = 5", "timeout = 5\ninsecure = true")
    text = text.replace('public_key = "keys/bob.public"\n', "")
    assert load_config(write(tmp_path, text)).insecure


def test_keygen_writes_separate_files_and_a_private_secret(tmp_path: Path) -> None:
    pair = write_keypair(tmp_path, "alice")
    public, secret = tmp_path / "alice.public", tmp_path / "alice.secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert pair.secret.decode() not in public.read_text()
    assert load_public_key(public) == pair.public
    assert load_secret_key(secret) == pair
    assert pair.secret.decode() not in repr(pair)


def test_key_files_are_checked(tmp_path: Path) -> None:
    write_keypair(tmp_path, "alice")
    secret = tmp_path / "alice.secret"
    secret.chmod(0o644)
    with pytest.raises(AuthenticationError, match="chmod 600"):
        load_secret_key(secret)
    bad = tmp_path / "bad.public"
    bad.write_text('public-key = "tooshort"\n')
    with pytest.raises(AuthenticationError, match="40 Z85 characters"):
        load_public_key(bad)
    with pytest.raises(AuthenticationError, match="mpc keygen"):
        load_public_key(tmp_path / "missing.public")
