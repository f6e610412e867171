"""Chang & Tracy, *Multi-Dimensional Inference and Confidential Data Protection with Decision
Tree Methods* (``../shared/papers/003_...``): a data owner ("High") prepares a release for
"Low" by blocking (``"?"``) as few non-confidential values as possible, so that decision trees
trained on the release misclassify the confidential cells, while the loss of functionality
``F`` stays at most ``v``.

What the release is, how ``E`` and ``F`` are measured and the paper's formulas:
:mod:`mpc.learners.confidential_release`.

Methods:

* :func:`adaptive` — Section 3: attribute selection by ``U_attr`` (3.1), leaf selection by
  ``U_leaf`` (3.2), the cheapest of I1, I2, I3 by net loss (3.3, I3's cost from footnote 3's
  iterative alpha), and the control step (3.4). ``control="as-written"`` (default) keeps
  every round and repeats from the top level until ``F`` would exceed ``v``;
  ``control="undo-no-gain"`` also undoes every round that does not raise ``E``.
* :func:`best_first` — footnote 5: hide the value with the largest estimated impact on the
  average classification error (``rank="expected"``: the expected error; ``rank="flips"``:
  the number of confidential cells turned wrong), rebuild the trees, repeat; optionally to a
  given number of modifications (the paper's 11).
* :func:`exhaustive` — every set of at most ``G`` hidden values, for tiny tables (Section 4.1's
  ``N = 20, M = 5``), to validate the heuristics.
* :func:`restore` — Section 4.3's restoration attack and the repeated hiding it calls for.

Roles: one party, High, holds the whole table and runs everything here locally; no value is
sent anywhere. What is revealed to whom: Low receives the release (the table with
confidential and blocked cells replaced by ``"?"``) and nothing else; which cells are
confidential and which were blocked is not marked (both are ``"?"``, as are the values
unknown in the original data).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc.errors import ConfigError
from mpc.learners.confidential_release import (
    Modification,
    Path,
    Release,
    Scores,
    check_choice,
    check_count,
    i1_net_loss,
    i2_net_loss,
    i3_cost,
    i3_net_loss,
    leaf_weights,
    node_at,
    u_attr,
    u_leaf,
)
from mpc.learners.tree import MISSING, Split, distribution, majority, predict_one

__all__ = [
    "CONTROLS",
    "RANKS",
    "LeafStats",
    "adaptive",
    "best_first",
    "exhaustive",
    "restore",
]

Progress = Callable[[str], None]


#: Section 3.4's control as written, and the variant that also undoes rounds without gain.
CONTROLS = ("as-written", "undo-no-gain")
#: Best-first's ranking: the expected effect on the error, or confidential cells turned wrong.
RANKS = ("expected", "flips")


# ------------------------------------------------------------------ the paper's formulas


# ------------------------------------------------------------------ uncertain evidence


# ------------------------------------------------------------------ the release


# ------------------------------------------------------------------ Section 3: adaptive


@dataclass
class LeafStats:
    """Section 3.2's statistics of one leaf ``L_k`` of ``DT_j``."""

    path: Path
    label: str
    tr: float
    fr: float
    te: float
    fe: float
    a_plus: float
    a_minus: float
    immediate: str | None  # A_i, None for a tree that is a single leaf
    correct_tests: list[int]  # rows of the correctly classified test records here
    correct_train: list[int]  # rows of the correctly labeled training records here
    utility: float = 0.0


def leaf_statistics(rel: Release, j: int) -> list[LeafStats]:
    """Every leaf of ``DT_j`` that holds a correctly classified test record, with ``Tr``,
    ``Fr``, ``Te``, ``Fe`` (fractional), ``a+`` and ``a-`` (training weight of the children of
    the immediate attribute whose label is / is not the leaf's, the leaf included) and
    ``U_leaf``."""
    tree = rel.tree(j)
    tests = [r for r, c in rel.confidential_cells() if c == j]
    train = rel.training_rows(j)
    at: dict[Path, dict[str, Any]] = {}

    def slot(path: Path) -> dict[str, Any]:
        return at.setdefault(path, {"te": 0.0, "fe": 0.0, "tests": [], "train": []})

    for r in tests:
        row = rel.row(r)
        correct = predict_one(tree, row) == rel.values[r, j]
        for path, w in leaf_weights(tree, row).items():
            s = slot(path)
            s["te" if correct else "fe"] += w
            if correct and w >= 1.0 - 1e-9:
                s["tests"].append(r)
    for r in train.tolist():
        weights = leaf_weights(tree, rel.row(r))
        if len(weights) == 1:
            (path,) = weights
            leaf = node_at(tree, path)
            if rel.values[r, j] == leaf.label:
                slot(path)["train"].append(r)
    out = []
    for path, s in at.items():
        if s["te"] <= 0:
            continue
        leaf = node_at(tree, path)
        label = leaf.label
        tr = float(leaf.counts.get(label, 0.0))
        fr = float(sum(leaf.counts.values())) - tr
        a_plus = a_minus = 0.0
        immediate = None
        if path:
            parent = node_at(tree, path[:-1])
            assert isinstance(parent, Split)
            immediate = parent.attribute
            for child in parent.children.values():
                weight = float(sum(child.counts.values()))
                if child.label == label:
                    a_plus += weight
                else:
                    a_minus += weight
        stats = LeafStats(path, label, tr, fr, s["te"], s["fe"], a_plus, a_minus, immediate,
                          s["tests"], s["train"])  # fmt: skip
        stats.utility = u_leaf(stats.te, len(tests), tr, fr, len(train))
        out.append(stats)
    out.sort(key=lambda s: (-s.utility, s.path))
    return out


@dataclass(frozen=True)
class _Plan:
    method: str
    net_loss: float
    cells: tuple[tuple[int, int], ...]


def plans(rel: Release, j: int, leaf: LeafStats, threshold: int) -> list[_Plan]:
    """Section 3.3: the applicable methods at ``leaf`` (their cells, at most ``threshold``),
    cheapest net loss first."""
    out = []
    i = rel.col(leaf.immediate) if leaf.immediate is not None else None
    if i is not None:
        cells = tuple((r, i) for r in leaf.correct_tests if rel.modifiable(r, i))
        if cells and len(cells) <= threshold:
            out.append(_Plan("I1", i1_net_loss(leaf.te, leaf.a_plus, leaf.a_minus), cells))
    cost2 = math.ceil(leaf.tr - leaf.fr + 1 - 1e-9)
    loss2 = i2_net_loss(leaf.tr, leaf.fr, leaf.te, leaf.fe)
    train = [r for r in leaf.correct_train if rel.released[r, j] != MISSING]
    if not math.isinf(loss2) and 0 < cost2 <= min(threshold, len(train)):
        out.append(_Plan("I2", loss2, tuple((r, j) for r in train[:cost2])))
    if i is not None:
        c = i3_cost(leaf.tr, leaf.fr, leaf.a_plus, leaf.a_minus)
        loss3 = i3_net_loss(c, leaf.te, leaf.fe)
        cells3 = [(r, i) for r in leaf.correct_train if rel.modifiable(r, i)]
        if not math.isinf(loss3) and 0 < c <= min(threshold, len(cells3)):
            out.append(_Plan("I3", loss3, tuple(cells3[: int(c)])))
    out.sort(key=lambda p: (p.net_loss, p.method))
    return out


@dataclass
class Outcome:
    """What a method did: scores before and after, the modifications, rounds."""

    method: str
    before: Scores
    after: Scores
    modifications: list[Modification]
    rounds: int = 0
    rejected: int = 0
    stopped: str = ""
    trace: list[dict[str, Any]] = field(default_factory=list)  # E and F after each accepted step
    options: dict[str, Any] = field(default_factory=dict)  # control, rank, limits, pruning

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            **self.options,
            "before": {"E": round(self.before.e, 4), "F": round(self.before.f, 4)},
            "after": {"E": round(self.after.e, 4), "F": round(self.after.f, 4)},
            "modifications": [m.to_json() for m in self.modifications],
            "count": len(self.modifications),
            "rounds": self.rounds,
            "rejected_rounds": self.rejected,
            "stopped": self.stopped,
            "trace": self.trace,
        }


def _begin(
    rel: Release, method: str, limit: int | None, options: dict[str, Any], *, per_cell: bool
) -> tuple[Outcome, Scores, int, int]:
    """The scores before and now, the outcome to fill, S and the round limit: ``limit``, by
    default the number of cells when every round hides at least one more (``per_cell``),
    else 4 S."""
    before = rel.baseline()
    current = rel.scores()
    options = {
        **options,
        "pruning": rel.pruning,
        "class_role": "ordinary" if rel.ordinary_class else "kept",
    }
    out = Outcome(method, before, current, rel.modifications, options=options)
    out.trace.append({"modifications": len(rel.modifications), "E": current.e, "F": current.f})
    s = sum(current.te.values())
    default = rel.values.size if per_cell else 4 * max(s, 1)
    return out, current, s, limit if limit is not None else default


def _choose(
    rel: Release, current: Scores, s: int, tried: set[tuple[int, Path, str]]
) -> tuple[int, LeafStats, _Plan] | None:
    """Sections 3.1-3.3: the attribute by ``U_attr`` (among those whose confidential cells
    are not all misclassified yet), in its tree the leaves by ``U_leaf``, at the first leaf
    with an applicable method not in ``tried`` the one of least net loss."""
    ranked = sorted(
        (a for a in current.te if current.cerr[a] < 1.0),
        key=lambda a: (-u_attr(current.cerr[a], current.te[a], s), a),
    )
    for a in ranked:
        j = rel.col(a)
        for leaf in leaf_statistics(rel, j):
            for plan in plans(rel, j, leaf, current.te[a]):
                if (j, leaf.path, plan.method) not in tried:
                    return j, leaf, plan
    return None


def adaptive(
    rel: Release,
    v: float,
    *,
    control: str = "as-written",
    max_modifications: int | None = None,
    max_rounds: int | None = None,
    progress: Progress | None = None,
) -> Outcome:
    """Section 3's adaptive modification of ``rel`` (modified in place).

    Each round: post as the class the attribute with the largest ``U_attr`` among those whose
    confidential cells are not all misclassified yet (3.1); in ``DT_j`` take the leaves by
    ``U_leaf`` (3.2); at the first leaf with an applicable method, apply the one with the
    least net loss (3.3), one value at a time, up to the round's threshold of modifications
    for this class label: ``TE_j`` (the attribute's share ``TE_j / S`` of the ``S``
    confidential values, times ``S``) (3.4). Then recompute ``E`` and ``F``.

    ``control="as-written"`` (Section 3.4): if ``F`` does not exceed ``v``, the round is kept
    and the procedure repeats from the top level; the round that would make ``F > v`` is
    undone and ends the run (so ``F <= v`` always holds). ``control="undo-no-gain"``: the
    same, and a round that does not raise ``E`` is undone too and its (attribute, leaf,
    method) not tried again.

    The run also ends when every confidential cell is misclassified, when no leaf has an
    applicable method left, after ``max_modifications`` values hidden in this run (the last
    round cut short to fit) or after ``max_rounds`` rounds, undone ones included (default:
    the number of cells as written, where every round hides one more at least; 4 S with
    undo-no-gain).
    """
    check_choice("control", control, CONTROLS)
    check_count("max_modifications", max_modifications)
    check_count("max_rounds", max_rounds)
    log = progress or (lambda _msg: None)
    options = {"control": control, "max_modifications": max_modifications}
    out, current, s, limit = _begin(
        rel, "adaptive", max_rounds, options, per_cell=control == "as-written"
    )
    start = len(rel.modifications)
    tried: set[tuple[int, Path, str]] = set()
    while out.rounds < limit:
        budget = (
            None
            if max_modifications is None
            else max_modifications - (len(rel.modifications) - start)
        )
        if budget is not None and budget <= 0:
            out.stopped = f"{max_modifications} modifications were made"
            break
        choice = _choose(rel, current, s, tried)
        if choice is None:
            out.stopped = "no leaf has an applicable modification left"
            break
        j, leaf, plan = choice
        out.rounds += 1
        cells = plan.cells if budget is None else plan.cells[:budget]
        mods = [Modification(rel.attributes[c], r, plan.method, plan.net_loss,
                             rel.attributes[j], out.rounds) for r, c in cells]  # fmt: skip
        rel.hide(cells, mods)
        new = rel.scores()
        if new.f > v:
            rel.undo(cells)
            out.rejected += 1
            out.stopped = f"the next round would make F = {new.f:.4f} > v = {v}"
            log(f"round {out.rounds}: {plan.method} on {rel.attributes[j]} would give F = "
                f"{new.f:.4f} > {v}; stopping")  # fmt: skip
            break
        if control == "undo-no-gain" and new.e <= current.e:
            rel.undo(cells)
            tried.add((j, leaf.path, plan.method))
            out.rejected += 1
            log(f"round {out.rounds}: {plan.method} x{len(cells)} on "
                f"{rel.attributes[j]} leaves E at {new.e:.4f}; undone")  # fmt: skip
            continue
        current = new
        out.trace.append({"modifications": len(rel.modifications), "E": new.e, "F": new.f})
        log(f"round {out.rounds}: {plan.method} x{len(cells)} on class "
            f"{rel.attributes[j]} (net loss {plan.net_loss:.2f}): E = {new.e:.4f}, "
            f"F = {new.f:.4f}")  # fmt: skip
        if current.wrong == sum(current.te.values()):
            out.stopped = "every confidential cell is misclassified"
            break
    else:
        out.stopped = f"the round limit ({limit}) was reached"
    out.after = current
    return out


# ------------------------------------------------------------------ footnote 5: best-first


def impacts(rel: Release) -> list[tuple[int, float, tuple[int, int]]]:
    """Footnote 5's estimate, for every value High may hide, of its impact on the average
    classification error with the current trees: ``(cells whose class flips to wrong minus
    those that flip to right, change of the expected error / S, cell)``.

    A feature value of a test record changes that record's classification (fractional
    routing). The class value of a training record of ``DT_j`` leaves its leaf, which can
    change the leaf's label for the test records there; a value that is both (a feature of a
    confidential row, the class of a training row of another tree) gets the sum of its two
    effects, one entry per cell. Other values change nothing until the trees are rebuilt,
    and are estimated at 0."""
    s = max(1, int(rel.confidential.sum()))
    out: list[tuple[int, float, tuple[int, int]]] = []
    test_rows = sorted(set(np.nonzero(rel.confidential)[0].tolist()))
    for r in test_rows:
        row = rel.row(r)
        base_soft, base_wrong = _errors(rel, r, row)
        for k in range(len(rel.attributes)):
            if not rel.modifiable(r, k):
                continue
            changed = dict(row)
            changed[rel.attributes[k]] = MISSING
            soft, wrong = _errors(rel, r, changed)
            out.append((wrong - base_wrong, (soft - base_soft) / s, (r, k)))
    for j in sorted(set(np.nonzero(rel.confidential)[1].tolist())):
        tree = rel.tree(j)
        at: dict[Path, list[tuple[int, float]]] = {}
        for r, c in rel.confidential_cells():
            if c == j:
                for path, w in leaf_weights(tree, rel.row(r)).items():
                    at.setdefault(path, []).append((r, w))
        for r in rel.training_rows(j).tolist():
            if not rel.modifiable(r, j):
                continue
            weights = leaf_weights(tree, rel.row(r))
            flips, soft = 0, 0.0
            for path, w in weights.items():
                if path not in at:
                    continue
                counts = dict(node_at(tree, path).counts)
                after = dict(counts)
                after[rel.values[r, j]] = after.get(rel.values[r, j], 0.0) - w
                total, total_after = sum(counts.values()), sum(after.values())
                label0 = majority(counts) if total > 0 else None
                label1 = majority(after) if total_after > 0 else label0
                for t, tw in at[path]:
                    truth = rel.values[t, j]
                    p0 = counts.get(truth, 0.0) / total if total > 0 else 0.0
                    p1 = after.get(truth, 0.0) / total_after if total_after > 0 else 0.0
                    soft += tw * (p0 - p1)
                    if tw >= 1.0 - 1e-9:
                        flips += int(label1 != truth) - int(label0 != truth)
            out.append((flips, soft / s, (r, j)))
    return _per_cell(out)


def _per_cell(
    estimates: list[tuple[int, float, tuple[int, int]]],
) -> list[tuple[int, float, tuple[int, int]]]:
    """One estimate per cell: a value that is both a feature of a confidential row and the
    class of a training row of ``DT_j`` acts in both ways when hidden, so its two estimates
    add up (in the order the cells were first estimated)."""
    merged: dict[tuple[int, int], tuple[int, float]] = {}
    for flips, soft, cell in estimates:
        f0, s0 = merged.get(cell, (0, 0.0))
        merged[cell] = (f0 + flips, s0 + soft)
    return [(f, s, cell) for cell, (f, s) in merged.items()]


def _errors(rel: Release, r: int, row: dict[str, Any]) -> tuple[float, int]:
    """(expected error, misclassified count) of the confidential cells of row ``r``."""
    soft, wrong = 0.0, 0
    for j in np.flatnonzero(rel.confidential[r]).tolist():
        tree = rel.tree(j)
        classes = sorted(tree.counts)
        truth = rel.values[r, j]
        dist = distribution(tree, row, classes)
        soft += 1.0 - (float(dist[classes.index(truth)]) if truth in classes else 0.0)
        wrong += int(predict_one(tree, row) != truth)
    return soft, wrong


def best_first(
    rel: Release,
    v: float,
    *,
    rank: str = "expected",
    max_modifications: int | None = None,
    max_steps: int | None = None,
    progress: Progress | None = None,
) -> Outcome:
    """Footnote 5: estimate every hideable value's impact on the average classification
    error (:func:`impacts`), hide the one with the largest, rebuild the trees, repeat.

    ``rank="expected"`` (default): the impact is the rise of the expected error (the mass
    of the true class the trees lose, averaged over the ``S`` confidential cells); ties go to
    the value that turns more cells wrong. ``rank="flips"``: the number of confidential
    cells turned wrong, ties to the larger rise of the expected error.

    With ``max_modifications = N`` the search runs to ``N`` hidden values (the paper's 11)
    whatever the estimates say; without, it stops when no value has a positive impact
    (rare for ``"expected"``: some value almost always lowers a true class's probability).
    It also stops when every confidential cell is misclassified, when no value is left, after
    ``max_steps`` steps (default 4 S without ``N``) and, like adaptive, when the next step
    would make ``F > v`` (that step is undone)."""
    check_choice("rank", rank, RANKS)
    check_count("max_modifications", max_modifications)
    check_count("max_steps", max_steps)
    log = progress or (lambda _msg: None)
    options = {"rank": rank, "max_modifications": max_modifications}
    out, current, s, limit = _begin(
        rel, "best-first", max_steps, options, per_cell=max_modifications is not None
    )
    start = len(rel.modifications)
    while out.rounds < limit:
        if current.wrong == s:
            out.stopped = "every confidential cell is misclassified"
            break
        if max_modifications is not None and len(rel.modifications) - start >= max_modifications:
            out.stopped = f"{max_modifications} modifications were made"
            break
        ranked = impacts(rel)
        if not ranked:
            out.stopped = "no value left to hide"
            break
        if rank == "expected":
            flips, soft, (r, k) = max(ranked, key=lambda x: (x[1], x[0], -x[2][0], -x[2][1]))
            positive = soft > 1e-12
        else:
            flips, soft, (r, k) = max(ranked, key=lambda x: (x[0], x[1], -x[2][0], -x[2][1]))
            positive = flips > 0
        if not positive and max_modifications is None:
            out.stopped = (
                "no single value raises the expected error"
                if rank == "expected"
                else "no single value changes the class of a confidential cell"
            )
            break
        impact = soft if rank == "expected" else flips / s
        out.rounds += 1
        rel.hide([(r, k)], [Modification(rel.attributes[k], r, "best-first", -impact,
                                         None, out.rounds)])  # fmt: skip
        new = rel.scores()
        if new.f > v:
            rel.undo([(r, k)])
            out.rejected += 1
            out.stopped = f"the next step would make F = {new.f:.4f} > v = {v}"
            break
        current = new
        out.trace.append({"modifications": len(rel.modifications), "E": new.e, "F": new.f})
        log(f"step {out.rounds}: hide ({r}, {rel.attributes[k]}) impact {impact:.4f}: "
            f"E = {new.e:.4f}, F = {new.f:.4f}")  # fmt: skip
    else:
        out.stopped = f"the step limit ({limit}) was reached"
    out.after = current
    return out


# ------------------------------------------------------------------ exhaustive search


def exhaustive(
    rel: Release,
    v: float,
    *,
    max_hidden: int = 2,
    max_evaluations: int = 200_000,
    progress: Progress | None = None,
) -> Outcome:
    """Every set of at most ``max_hidden`` hideable values (Section 4.1's batch exhaustive
    evaluation): the release with the largest ``E`` subject to ``F <= v``, fewest values on
    ties. Refuses tables where that is more than ``max_evaluations`` releases."""
    log = progress or (lambda _msg: None)
    before = rel.baseline()
    start = rel.scores()
    n, m = rel.shape
    candidates = [(r, k) for r in range(n) for k in range(m) if rel.modifiable(r, k)]
    count = sum(math.comb(len(candidates), g) for g in range(1, max_hidden + 1))
    if count > max_evaluations:
        raise ConfigError(
            f"exhaustive search would evaluate {count:,} releases ({len(candidates)} hideable "
            f"values, up to {max_hidden} hidden); it is meant for tiny tables (N = 20, M = 5): "
            "use --method adaptive or best-first"
        )
    best: tuple[float, int, tuple[tuple[int, int], ...]] = (start.e, 0, ())
    done = 0
    for g in range(1, max_hidden + 1):
        for combo in itertools.combinations(candidates, g):
            rel.hide(combo, [])
            e = rel.scores(with_f=False).e
            if e > best[0]:
                f = rel.scores().f
                if f <= v:
                    best = (e, g, combo)
            for r, k in combo:
                rel.released[r, k] = rel.values[r, k]
            rel._trees.clear()
            done += 1
            if done % 1000 == 0:
                log(f"exhaustive: {done:,}/{count:,} releases, best E = {best[0]:.4f}")
    e, _, combo = best
    rel.hide(combo, [Modification(rel.attributes[k], r, "exhaustive") for r, k in combo])
    after = rel.scores()
    out = Outcome("exhaustive", before, after, rel.modifications, rounds=done)
    out.trace = [{"modifications": 0, "E": start.e, "F": 0.0},
                 {"modifications": len(combo), "E": after.e, "F": after.f}]  # fmt: skip
    out.stopped = f"evaluated all {done:,} releases with at most {max_hidden} hidden values"
    return out


# ------------------------------------------------------------------ Section 4.3: restoration


def restoration(rel: Release) -> tuple[float, list[tuple[int, int]]]:
    """The restoration attack: Low trains ``DT_a`` on the release and infers every value
    High blocked (including blocked values that were made confidential since); returns the
    share restored correctly and those cells."""
    blocked = [(m.row, rel.col(m.attribute)) for m in rel.modifications]
    if not blocked:
        return 0.0, []
    restored = [
        (r, k) for r, k in blocked if predict_one(rel.tree(k), rel.row(r)) == rel.values[r, k]
    ]
    return len(restored) / len(blocked), restored


def restore(
    rel: Release,
    v: float,
    run: Callable[[Release], Outcome],
    *,
    until: float,
    max_iterations: int = 5,
    progress: Progress | None = None,
) -> tuple[Outcome, list[dict[str, Any]]]:
    """Section 4.3: run ``run`` (a method), attack the release; while the restoration rate
    is at least ``until``, make the restored values confidential (they are test data now)
    and run the method again on the release so far. Stops early when every restored value
    is confidential already (another round would change nothing)."""
    log = progress or (lambda _msg: None)
    history: list[dict[str, Any]] = []
    outcome = run(rel)
    first_before = outcome.before
    for it in range(max_iterations):
        rate, restored = restoration(rel)
        new = [c for c in restored if not rel.confidential[c]]
        history.append({"iteration": it, "blocked": len(rel.modifications),
                        "restored": len(restored), "newly_confidential": len(new),
                        "restoration_rate": round(rate, 4),
                        "E": round(outcome.after.e, 4)})  # fmt: skip
        log(f"restoration {it}: {len(restored)} of {len(rel.modifications)} blocked values "
            f"restored (rate {rate:.3f})")  # fmt: skip
        if rate < until or not new:
            break
        for c in new:
            rel.confidential[c] = True
        outcome = run(rel)
    outcome.before = first_before
    return outcome, history
