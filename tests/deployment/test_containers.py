"""The image and docker-compose.yml, for real: every profile end to end in containers, what
each container can read, and a killed container (tests/containers.py: they skip where no
Docker engine answers, and fail then in CI, which sets MPC_REQUIRE_DOCKER=1)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import pytest

from mpc.datasets.fetch import SHIPPED
from parties.cli.main import build_parser
from parties.systems.registry import get_system

from ..conftest import ROOT
from ..containers import (
    built_image,
    compose,
    container_exit_codes,
    container_of,
    docker_missing,
    own,
    remove_project,
    report,
    require_docker,
    run,
    wait_exits,
    wait_for_log,
)

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

#: the folder the compose file mounts as the data directory: the package's own tables (the
#: profiles train on weather, which is embedded; the kit on car)
DATA = SHIPPED

#: profile, its environment, the report of every party (volume, file), the model parts
PROFILES: dict[str, tuple[str, dict[str, str], dict[str, tuple[str, str]], list[str]]] = {
    "ppid3": (
        "ppid3", {"MPC_PPID3_DATASET": "weather"},
        {f"site{i}": (f"reports-site{i}", "ppid3.json") for i in (1, 2, 3)},
        ["site1", "site2", "site3"],
    ),
    "ppid3-fast": (
        "ppid3-fast", {"MPC_PPID3_DATASET": "weather", "MPC_PPID3_COUNTS": "fast"},
        {**{f"site{i}": (f"reports-site{i}", "ppid3.json") for i in (1, 2, 3)},
         "ppid3-dealer": ("reports-ppid3-dealer", "ppid3.json")},
        ["site1", "site2", "site3"],
    ),
    "ppid3-sites": (
        "ppid3",
        {"MPC_PPID3_DATASET": "weather", "MPC_PPID3_COUNTS": "fast", "MPC_PPID3_HELPER": "sites"},
        {f"site{i}": (f"reports-site{i}", "ppid3.json") for i in (1, 2, 3)},
        ["site1", "site2", "site3"],
    ),
    "hybrid-id3": (
        "hybrid-id3", {"MPC_HYBRID_DATASET": "weather"},
        {"alice": ("reports-alice", "hybrid-id3.json"), "bob": ("reports-bob", "hybrid-id3.json"),
         "hybrid-dealer": ("reports-hybrid-dealer", "hybrid-id3.json")},
        [],
    ),
    "cdtl": (
        "cdtl",
        {"MPC_CDTL_DATASET": "weather", "MPC_CDTL_SENSITIVE": "temperature",
         "MPC_CDTL_CLASS": "play", "MPC_CDTL_FOLDS": "2"},
        {"client": ("reports-client", "cdtl.json"), "cdbs": ("reports-cdbs", "cdtl.json")},
        [],
    ),
}  # fmt: skip

#: the mpc run options that plan what each profile's plan service deploys (for the audit)
AUDIT = {
    "ppid3": "ppid3 --dataset weather --sites 3 --max-depth 4",
    "ppid3-fast": "ppid3 --dataset weather --sites 3 --max-depth 4 --counts fast --helper dealer",
    "ppid3-sites": "ppid3 --dataset weather --sites 3 --max-depth 4 --counts fast --helper sites",
    "hybrid-id3": "hybrid-id3 --dataset weather --dot-product dealer",
}

#: what each container of a party may read, besides /public: its own folders
OWN = {
    "site1": ["/secrets/site1", "/private/site1", "/reports/site1", "/models/site1"],
    "site2": ["/secrets/site2", "/private/site2", "/reports/site2", "/models/site2"],
    "site3": ["/secrets/site3", "/private/site3", "/reports/site3", "/models/site3"],
    "ppid3-dealer": ["/secrets/dealer", "/private/dealer", "/reports/ppid3-dealer"],
    "alice": ["/secrets/alice", "/private/alice", "/reports/alice"],
    "bob": ["/secrets/bob", "/private/bob", "/reports/bob"],
    "hybrid-dealer": ["/secrets/dealer", "/private/dealer", "/reports/hybrid-dealer"],
    "client": ["/secrets/client", "/private/client", "/reports/client"],
    "cdbs": ["/secrets/cdbs", "/private/cdbs", "/reports/cdbs", "/var/lib/cdbs"],
}

#: lists every file a container can read outside /public and the system's own folders
READABLE = (
    "import json, os\n"
    "out = []\n"
    "for top in ('/secrets', '/private', '/reports', '/models', '/var/lib/cdbs'):\n"
    "    for d, _, files in os.walk(top):\n"
    "        for f in files:\n"
    "            p = os.path.join(d, f)\n"
    "            try:\n"
    "                open(p, 'rb').read(1)\n"
    "                out.append(p)\n"
    "            except OSError:\n"
    "                pass\n"
    "print(json.dumps(out))\n"
)


def _env(extra: dict[str, str]) -> dict[str, str]:
    return {"MPC_DATA_DIR": str(DATA), "MPC_TIMEOUT": "30", **extra}


def test_the_container_tests_run_where_ci_runs_them() -> None:
    """In CI (``MPC_REQUIRE_DOCKER=1``, set by .ci/run) a Docker engine answers, so the tests
    below run instead of skipping; elsewhere they skip, saying why."""
    if os.environ.get("MPC_REQUIRE_DOCKER") != "1":
        pytest.skip(f"not in CI (MPC_REQUIRE_DOCKER unset); here: {docker_missing() or 'ok'}")
    assert docker_missing() is None, docker_missing()
    assert built_image()


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_a_compose_profile_runs_end_to_end_in_containers(name: str) -> None:
    """Every container exits 0; each party's report, in its own volume with mode 0600, says
    ok; the trees equal plain ID3 (the audit, from the reports); the model parts are in
    their own volumes with mode 0600; and no party's container can read another party's
    secret key, input or report."""
    require_docker()
    built_image()
    profile, extra, reports, models = PROFILES[name]
    project = f"mpctest-{name}"
    env = _env(extra)
    remove_project(project, profile, env=env)
    try:
        compose(project, "--profile", profile, "up", "--no-build", env=env, timeout=600)
        codes = container_exit_codes(project)
        assert codes and all(c == 0 for c in codes.values()), codes
        got: dict[str, dict[str, Any]] = {}
        for service, (volume, path) in reports.items():
            mode, doc = report(f"{project}_{volume}", path)
            assert mode == "600", (service, mode)
            assert doc["ok"], (service, doc.get("error"))
            got[service] = doc
        for site in models:
            mode, _ = report(f"{project}_models-{site}", "ppid3.model.json")
            assert mode == "600", (site, mode)
        if name in AUDIT:
            args = build_parser().parse_args(["run", *AUDIT[name].split(), "--data-dir", str(DATA)])
            system = get_system(args.system)
            plan = system.plan_from(args)
            by_name = {s.replace("ppid3-", "").replace("hybrid-", ""): d for s, d in got.items()}
            result = system.finish(by_name, plan)
            identical = result.get("identical", result.get("smc_only_identical_to_plain"))
            assert identical is True, result
        for service in reports:
            proc = compose(project, "--profile", profile, "run", "--rm", "--no-deps", service,
                           "python", "-c", READABLE, env=env)  # fmt: skip
            readable = json.loads(proc.stdout.strip().splitlines()[-1])
            allowed = [*OWN[service], "/secrets/monitor"]
            stray = [p for p in readable if not any(p.startswith(a + "/") for a in allowed)]
            assert not stray, f"{service} can read {stray}"
            assert any(p.startswith(OWN[service][0] + "/") for p in readable), readable
    finally:
        remove_project(project, profile, env=env)


def test_a_killed_container_ends_the_others_within_the_deadline_naming_it() -> None:
    """site2's container killed while the three sites train (house-votes-84, the paper's
    counts, a 10 s deadline): site1 and site3 stop within the deadline, each report naming
    site2."""
    require_docker()
    built_image()
    project = "mpctest-kill"
    env = _env({"MPC_PPID3_DATASET": "house-votes-84", "MPC_TIMEOUT": "10"})
    remove_project(project, "ppid3", env=env)
    try:
        compose(project, "--profile", "ppid3", "up", "--no-build", "-d", env=env)
        site2 = container_of(project, "site2")
        wait_for_log(site2, "running ppid3", deadline=120)
        run(["docker", "kill", site2])  # connected and running: the kill lands mid-protocol
        others = [container_of(project, site) for site in ("site1", "site3")]
        codes = dict(zip(("site1", "site3"), wait_exits(others, deadline=60), strict=True))
        assert codes["site1"] != 0 and codes["site3"] != 0, codes
        for site in ("site1", "site3"):
            _, doc = report(f"{project}_reports-{site}", "ppid3.json")
            assert not doc["ok"] and "site2" in doc["error"]["message"], doc["error"]
    finally:
        remove_project(project, "ppid3", env=env)


# ------------------------------------------------------------------ the per-organisation kit

KIT = ROOT / "kit" / "party.yml"
CAR = ["buying", "maint", "doors", "persons", "lug_boot", "safety"]
#: three organisations, each holding its own columns (the class at the third)
KIT_PARTS = [["buying", "maint"], ["doors", "persons"], ["lug_boot", "safety"]]


def _kit_up(org: Path, party: str, port: int, csv_file: Path, args: str, network: str) -> None:
    """One organisation's `docker-compose -p ORG -f kit/party.yml --env-file ORG.env up`, with
    the settings file it writes on its own host."""
    env_file = org / "party.env"
    env_file.write_text(
        f"MPC_PARTY={party}\nMPC_ROLE=site\nMPC_PORT={port}\n"
        f"MPC_PUBLIC={org.parent / 'public'}\n"
        f"MPC_SECRET_KEY={org / 'secret' / party / (party + '.secret')}\n"
        f"MPC_CSV={csv_file}\nMPC_OUT={org / 'out'}\nMPC_ARGS={args}\nMPC_NETWORK={network}\n"
    )  # fmt: skip
    compose(org.name, "-f", str(KIT), "--env-file", str(env_file), "up", "-d", "--no-build")


def _kit_wait(orgs: list[Path], deadline: float = 300) -> dict[str, int]:
    """Every organisation's party container's exit code, once all have exited."""
    parties = [container_of(o.name, "party") for o in orgs]
    return dict(zip([o.name for o in orgs], wait_exits(parties, deadline), strict=True))


def test_three_organisations_train_and_classify_with_the_kit_each_holding_its_own_file(
    tmp_path: Path,
) -> None:
    """The kit (kit/party.yml) as three organisations would run it: three compose projects on
    one Docker network, each given only its own CSV of UCI car (1,000 records, in its own row
    order), its own secret key (made by its own `mpc keygen`) and the public folder. They
    train PPID3 (counts by secret sharing, a third site dealing) and keep their model parts;
    then each brings 728 new, unlabelled records and the class site's predictions equal plain
    ID3's on the joined table, which exists only in this test."""
    require_docker()
    built_image()
    from mpc.learners.id3 import ID3Classifier

    from ..processes.test_own_data import split_files, write_csv

    data = DATA / "car" / "car.data"
    rows = [line.split(",") for line in data.read_text().split() if line]
    train, new = rows[:1000], rows[1000:]
    network, base = "mpctest-kit", 57610
    sites = ["site1", "site2", "site3"]
    orgs = [tmp_path / f"org{i}" for i in (1, 2, 3)]
    public = tmp_path / "public"
    cols = {h: [r[j] for r in train] for j, h in enumerate(CAR)}
    own_train = split_files(tmp_path, cols, [r[6] for r in train], KIT_PARTS, seed=1)
    new_cols = {h: [r[j] for r in new] for j, h in enumerate(CAR)}
    own_new = split_files(tmp_path, new_cols, None, KIT_PARTS, seed=2, prefix="n")
    for org, site, tr, nw in zip(orgs, sites, own_train, own_new, strict=True):
        (org / "out").mkdir(parents=True)
        tr.rename(org / "train.csv")
        nw.rename(org / "new.csv")
        # on its own host: its key pair; the public half goes to whoever writes the deployment
        run(["mpc", "keygen", "--out", str(public / "keys"), "--secrets", str(org / "secret"),
             site])  # fmt: skip
    proc = run(["mpc", "deploy", "ppid3", "--partition", ";".join(",".join(p) for p in KIT_PARTS),
                "--class", "class", "--counts", "fast", "--helper", "sites", "--out", str(public),
                "--port", str(base)])  # fmt: skip
    assert "fingerprint" in proc.stdout.lower(), proc.stdout
    for org in orgs:
        own(org)
    own(public)
    run(["docker", "network", "rm", network], check=False)
    run(["docker", "network", "create", network])
    try:
        for i, (org, site) in enumerate(zip(orgs, sites, strict=True)):
            _kit_up(org, site, base + i, org / "train.csv",
                    f"--model-out /out/{site}.model.json", network)  # fmt: skip
        codes = _kit_wait(orgs)
        assert all(c == 0 for c in codes.values()), (codes, _logs(orgs))
        for org, site in zip(orgs, sites, strict=True):
            doc = json.loads((org / "out" / "report.json").read_text())
            assert doc["ok"], doc.get("error")
            assert oct((org / "out" / f"{site}.model.json").stat().st_mode & 0o777) == "0o600"
            compose(org.name, "-f", str(KIT), "--env-file", str(org / "party.env"), "down")
        for i, (org, site) in enumerate(zip(orgs, sites, strict=True)):
            out = " --predictions-out /out/predictions.csv" if site == "site3" else ""
            _kit_up(org, site, base + i, org / "new.csv",
                    f"--model /out/{site}.model.json{out}", network)  # fmt: skip
        codes = _kit_wait(orgs)
        assert all(c == 0 for c in codes.values()), (codes, _logs(orgs))
        with (orgs[2] / "out" / "predictions.csv").open() as fh:
            got = {r["id"]: r["class"] for r in csv.DictReader(fh)}
        assert not (orgs[0] / "out" / "predictions.csv").exists()
        from mpc.datasets import load_csv

        joined = write_csv(tmp_path / "joined.csv", [*CAR, "class"], train)
        plain = ID3Classifier().fit(
            load_csv(joined, "class"), attribute_order=[a for p in KIT_PARTS for a in p],
            sites={a: i for i, p in enumerate(KIT_PARTS) for a in p},
        )  # fmt: skip
        new_joined = write_csv(tmp_path / "new-joined.csv", ["id", *CAR],
                               [[f"n{i}", *r[:6]] for i, r in enumerate(new)])  # fmt: skip
        expected = plain.predict(load_csv(new_joined, "id"))
        assert len(got) == len(new)
        assert [got[f"n{i}"] for i in range(len(new))] == list(map(str, expected))
    finally:
        for org in orgs:
            if (org / "party.env").exists():
                compose(org.name, "-f", str(KIT), "--env-file", str(org / "party.env"), "down",
                        check=False)  # fmt: skip
        run(["docker", "network", "rm", network], check=False)


def _logs(orgs: list[Path]) -> str:
    out = []
    for org in orgs:
        proc = compose(org.name, "-f", str(KIT), "--env-file", str(org / "party.env"), "logs",
                       check=False)  # fmt: skip
        out.append(proc.stdout[-2000:])
    return "\n".join(out)
