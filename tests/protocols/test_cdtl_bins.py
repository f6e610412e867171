"""cdtl and continuous attributes: a continuous non-sensitive attribute stays continuous and
every tree splits it by thresholds (the subtrees still equal the learner on the true leaf
rows); a continuous sensitive attribute is binned with cut points fitted on each fold's
training rows only; ``--bin-attributes all`` bins every continuous attribute, per fold too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mpc.crypto.sealed import open_json
from mpc.datasets import CONTINUOUS, DataError, Discretizer, Table
from mpc.errors import InputError
from mpc.learners.evaluation import rows_of
from mpc.learners.tree import Split, from_json, nodes, predict_one, to_json
from parties.own_party import OwnParty
from parties.programs import cdtl_tables
from parties.programs.cdtl_tables import cdtl_folds, fit_bins, fold_input, fold_tables
from protocols.cdtl.anatomization import suppress_for_l
from protocols.cdtl.cdtl import learner, subtree_aad
from protocols.cdtl.find_leaf import find_bdt_leaf

from ..conftest import run_mpc_json
from .test_cdtl import SENSITIVE, classify_every_row


def mixed_table(seed: int, n: int = 160, *, continuous_s: bool = False) -> Table:
    """``x`` continuous (the class is c1 below 30), ``b`` nominal, the sensitive ``s``
    nominal (three values) or, with ``continuous_s``, a number whose top third also gives
    class c1."""
    rng = np.random.default_rng(seed)
    x = np.round(rng.uniform(0, 90, n), 1)
    b = rng.integers(0, 2, n)
    s = rng.uniform(0, 30, n) if continuous_s else rng.integers(0, 3, n).astype(np.float64)
    top = s >= 20 if continuous_s else s == 2
    y = np.where(rng.random(n) < 0.1, rng.integers(0, 2, n), ((x < 30) | top).astype(int))
    return Table(
        name="m",
        attributes=("x", "b", SENSITIVE),
        kinds=(CONTINUOUS, "nominal", CONTINUOUS if continuous_s else "nominal"),
        columns=(
            x,
            np.array([f"b{v}" for v in b], dtype=object),
            s if continuous_s else np.array([f"s{int(v)}" for v in s], dtype=object),
        ),
        target=np.array([f"c{v}" for v in y], dtype=object),
        class_name="y",
        source="test",
    )


def test_a_partial_discretizer_bins_only_the_attributes_it_was_fitted_on() -> None:
    t = mixed_table(0, continuous_s=True)
    disc = Discretizer.fit(t, 3, attributes=[SENSITIVE])
    assert set(disc.edges) == {SENSITIVE} and disc.partial
    out = disc.transform(t)
    assert out.kinds == (CONTINUOUS, "nominal", "nominal")
    assert np.array_equal(out.column("x"), t.column("x"))
    assert set(out.column(SENSITIVE).tolist()) == set(disc.labels(SENSITIVE))
    assert disc.to_dict()["partial"] is True and "partial" not in Discretizer.fit(t, 3).to_dict()
    # a whole-table discretizer still refuses a continuous attribute it has no cut points for
    with pytest.raises(DataError):
        Discretizer(bins=3, edges={SENSITIVE: (10.0,)}).transform(t)
    with pytest.raises(DataError, match=r"cannot bin \['b'\]"):
        Discretizer.fit(t, 3, attributes=["b"])


def test_the_bins_of_a_fold_are_fitted_on_its_training_rows_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A spy on :meth:`Discretizer.fit`: each fold fits once, on exactly its training rows;
    moving the fold's test values never moves its cut points, which differ from the cut
    points of the whole table."""
    t = mixed_table(4, n=90, continuous_s=True)
    folds = cdtl_folds(t.target, 3, seed=0)
    fitted: list[np.ndarray] = []
    real_fit = Discretizer.fit.__func__  # type: ignore[attr-defined]

    def spy(cls: type[Discretizer], table: Table, bins: int, **kw: Any) -> Discretizer:
        fitted.append(np.asarray(table.column(SENSITIVE), dtype=np.float64))
        return real_fit(cls, table, bins, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(cdtl_tables.Discretizer, "fit", classmethod(spy))
    whole = real_fit(Discretizer, t, 4, attributes=[SENSITIVE]).edges[SENSITIVE]
    for fold in folds:
        fitted.clear()
        train, test, disc = fold_tables(
            t, fold, sensitive=SENSITIVE, bins=4, bin_attributes="sensitive"
        )
        assert disc is not None and len(fitted) == 1
        assert np.array_equal(fitted[0], t.column(SENSITIVE)[fold["train"]])
        assert disc.edges[SENSITIVE] != whole
        assert train.kinds == test.kinds == (CONTINUOUS, "nominal", "nominal")
        # the test rows are binned with the training rows' cut points
        assert (
            test.column(SENSITIVE).tolist()
            == disc.transform(t.subset(np.asarray(fold["test"]))).column(SENSITIVE).tolist()
        )
        # test values moved far away change nothing of the cut points
        moved = t.column(SENSITIVE).copy()
        moved[fold["test"]] = 1000.0
        t2 = Table(
            t.name, t.attributes, t.kinds, (*t.columns[:2], moved), t.target, t.class_name, t.source
        )
        _, test2, disc2 = fold_tables(
            t2, fold, sensitive=SENSITIVE, bins=4, bin_attributes="sensitive"
        )
        assert disc2 == disc and set(test2.column(SENSITIVE).tolist()) == {
            f">{disc.edges[SENSITIVE][-1]}"
        }
    # all: every continuous attribute binned, still on the training rows only
    fitted.clear()
    train, _, disc = fold_tables(t, folds[0], sensitive=SENSITIVE, bins=4, bin_attributes="all")
    assert disc is not None and set(disc.edges) == {"x", SENSITIVE} and not disc.partial
    assert len(fitted) == 1 and len(fitted[0]) == len(folds[0]["train"])
    assert set(train.kinds) == {"nominal"}
    # nothing continuous to bin with a nominal sensitive attribute: no discretizer at all
    assert fit_bins(mixed_table(0), sensitive=SENSITIVE, bins=4, bin_attributes="sensitive") is None


@pytest.mark.parametrize("continuous_s", [False, True])
def test_cdtl_splits_a_continuous_attribute_by_thresholds_as_the_plain_learner_does(
    continuous_s: bool,
) -> None:
    """One fold's training rows (``s`` binned on them when continuous) outsourced and every
    row classified: the BDT and the subtrees split ``x`` by thresholds, and each subtree is
    the learner on the true rows of its leaf, each prediction that subtree's."""
    t = mixed_table(2, continuous_s=continuous_s)
    fold = cdtl_folds(t.target, 3, seed=0)[0]
    train, _, _ = fold_tables(t, fold, sensitive=SENSITIVE, bins=3, bin_attributes="sensitive")
    assert train.kind("x") == CONTINUOUS and train.kind(SENSITIVE) == "nominal"
    prune = set(fold["prune"])
    preds, _, _, store, loaded, key = classify_every_row(train, prune)
    splits = [n for n in nodes(loaded.bdt) if isinstance(n, Split)]
    assert any(n.kind == "threshold" and n.attribute == "x" for n in splits)
    leaf_of = [find_bdt_leaf(loaded.bdt, r)[0] for r in rows_of(train)]
    assert any("x=<=" in leaf for leaf in leaf_of)
    refined = set(store.subtree_leaves())
    assert refined
    for leaf in refined:
        ix = [i for i, x in enumerate(leaf_of) if x == leaf]
        want = learner().fit(
            train.subset(ix), prune_rows=[j for j, i in enumerate(ix) if i in prune]
        )
        blob = store.subtree(train.name, leaf)
        assert blob is not None
        assert open_json(key, blob, subtree_aad(train.name, leaf)) == to_json(want.tree_)
    for r, p, leaf in zip(rows_of(train), preds, leaf_of, strict=True):
        blob = store.subtree(train.name, leaf)
        if blob is not None:
            assert p == predict_one(
                from_json(open_json(key, blob, subtree_aad(train.name, leaf))), r
            )


def _write_mixed_csv(path: Path, t: Table) -> Path:
    lines = [",".join([*t.attributes, t.class_name])]
    for r, y in zip(zip(*t.columns, strict=True), t.target, strict=True):
        lines.append(",".join([*(str(v) for v in r), str(y)]))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.processes
@pytest.mark.timeout(120)
@pytest.mark.parametrize("bin_attributes", ["sensitive", "all"])
def test_mpc_run_cdtl_keeps_continuous_attributes_or_bins_them_all(
    tmp_path: Path, bin_attributes: str
) -> None:
    """``mpc run cdtl`` on a file with a continuous ``x`` and a continuous sensitive ``s``:
    ``s`` is binned in every fold; ``x`` is split by thresholds in the BDTs, unless
    ``--bin-attributes all`` bins it too."""
    path = _write_mixed_csv(tmp_path / "m.csv", mixed_table(3, n=150, continuous_s=True))
    code, doc = run_mpc_json(
        "run", "cdtl", "--csv", str(path), "--class", "y", "--sensitive", SENSITIVE,
        "--cv", "2", "--bins", "3", "--bin-attributes", bin_attributes, "--quiet",
        deadline=100,
    )  # fmt: skip
    assert code == 0 and doc["ok"], doc
    r = doc["result"]
    assert r["bin_attributes"] == bin_attributes
    if bin_attributes == "all":
        assert r["binned"] == ["x", SENSITIVE] and r["continuous"] == []
    else:
        assert r["binned"] == [SENSITIVE] and r["continuous"] == ["x"]
    for m in r["methods"].values():
        assert 0.5 <= m["accuracy"] <= 1.0
    ledger = doc["parties"]["cdbs"]["ledger"]
    bdts = [from_json(e["value"]["tree"]) for e in ledger if e["label"] == "cdtl/bdt"]
    assert len(bdts) == 2
    kinds = {n.kind for b in bdts for n in nodes(b) if isinstance(n, Split)}
    assert ("threshold" in kinds) == (bin_attributes == "sensitive")


def test_a_fold_whose_bins_make_l_impossible_is_named_with_the_bins_it_got() -> None:
    """A sensitive attribute with few distinct values gets fewer bins than ``--bins`` asks;
    a fold where that leaves fewer than ``l`` bins fails naming the fold and the bins."""
    t = mixed_table(5, n=60, continuous_s=True)
    s = np.where(np.arange(60) % 10 == 0, 1.0, 0.0)  # one value in 90% of the rows
    t = Table(t.name, t.attributes, t.kinds, (*t.columns[:2], s), t.target, t.class_name, t.source)
    fold = cdtl_folds(t.target, 2, seed=0)[1]
    train, _, disc = fold_tables(t, fold, sensitive=SENSITIVE, bins=4, bin_attributes="sensitive")
    assert disc is not None and len(disc.labels(SENSITIVE)) == 2
    me = OwnParty("client", "client", "tcp://127.0.0.1:1", "", None)
    with (
        pytest.raises(InputError, match=r"fold 1: .*into 2 of --bins 4 equal-frequency bins"),
        fold_input(me, 1, SENSITIVE, disc),
    ):
        suppress_for_l(train, SENSITIVE, 3)
