"""Deployments: the files that describe one, and the tools that start its parties.

* :mod:`mpc.deployment.launcher` — a deployment's keys, file and private inputs written to a
  folder, its parties run as local processes (``mpc run``), and how signals stop them;
* :mod:`mpc.deployment.netlab` — the same parties, each in a Linux network namespace of its
  own with a shaped link (the multi-host tests and benchmarks).

It builds on :mod:`mpc.runtime` (deployment files, keys, private files); no party process
needs it to run.
"""
