"""Run a system from Python: the same processes as ``mpc run``, and a typed result.

Run it: ``python docs/examples/run_system.py`` (it writes its picture to a temporary folder).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from mpc import ConfigError
from mpc.learners.tree import render
from parties import run_system

# PPID3 on the weather table, split over three sites; every site is its own process. The
# counts are made on shares and opened to their owners, as in the paper (reveal="counts"; the
# default, reveal="tree", opens only the tree)
run = run_system(
    "ppid3", dataset="weather", sites=3, class_site=3, counts="fast", reveal="counts", timeout=30
)
print(f"ok: {run.ok}   accuracy: {run.accuracy}   wall: {run.wall_s:.1f} s")
print(f"trust: {run.trust}")
print(f"sites: {run.sites}, the class at {run.class_site}")
print(render(run.tree))
for name, party in run.parties.items():
    labels = sorted({entry["label"] for entry in party.ledger})
    print(f"{name}: sent {party.metrics['bytes_sent']} bytes; learned {', '.join(labels)}")
counts = run.parties["site3"].learned("ppid3/node-counts")
print(f"site3 (the class site) learned {len(counts)} class distributions")

with tempfile.TemporaryDirectory() as folder:
    picture = run.plot(Path(folder) / "ppid3-weather.svg")
    print(f"picture: {picture.drawn} nodes, owners {', '.join(picture.owners)}")

# the toy systems too; their result is what `mpc run --json` prints under "result"
total = run_system("secure-sum", parties=3, inputs=[3, -1, 4], modulus=1000, timeout=30)
print(f"secure-sum: {total.result} (mod 1000), trust: {total.trust}")

# a wrong option is an error before any process starts
try:
    run_system("ppid3", dataset="weather", sites=3, class_site=7)
except ConfigError as exc:
    print(f"error: {exc}")
