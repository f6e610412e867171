"""What a PPID3 classification leaves at the sites besides the predictions: each site's own
count of values its part never saw in training, the receiving site's per-record class counts
(scores) and, where the class site holds the true classes of the records, their evaluation.

Nothing here sends a message. A site's unseen values are its own columns against its own
nodes. The scores are the class counts of the leaf (or of the node where a record stopped at
an unseen value) that the class site already learns in the paper's mode (Algorithm 8 hands it
each record's leaf, Theorem 2; the counts are in its part, Theorem 1). The evaluation is the
class site's own labels against the predictions it receives.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mpc.learners.evaluation import accuracy, confusion_matrix, format_confusion
from mpc.runtime.files import open_private
from protocols.ppid3.ppid3 import DistributedTree

__all__ = [
    "evaluation",
    "evaluation_log",
    "evaluation_text",
    "unseen_values",
    "unseen_warning",
    "write_scored_predictions",
]


def unseen_values(tree: DistributedTree, columns: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """How many records have, in each attribute this site splits on, a value that none of its
    nodes on that attribute has a branch for (never seen in training). Such a record, if it
    reaches such a node, is classified by that node's majority class, as plain ID3 does."""
    seen: dict[str, set[str]] = {}
    for node in tree.interior.values():
        seen.setdefault(str(node["attribute"]), set()).update(map(str, node["children"]))
    out = {}
    for attribute, values in sorted(seen.items()):
        column = columns.get(attribute)
        if column is None:
            continue
        n = sum(1 for v in column if str(v) not in values)
        if n:
            out[attribute] = n
    return out


def unseen_warning(name: str, unseen: Mapping[str, int], n: int) -> str | None:
    """One line for a site's log and summary, or None when every value was seen."""
    if not unseen:
        return None
    each = ", ".join(f"{a}: {k}" for a, k in unseen.items())
    return (
        f"{name}: of {n} records, some hold values its part never saw in training ({each}); a "
        "record that reaches a node on such a value is given that node's majority class"
    )


def evaluation(
    truth: Sequence[str], predicted: Sequence[str], classes: Sequence[str] | None = None
) -> dict[str, Any]:
    """Accuracy, the confusion matrix (rows: true classes, columns: predicted) and the share of
    the most common true class (the accuracy of predicting it for every record)."""
    truth, predicted = [str(t) for t in truth], [str(p) for p in predicted]
    labels = sorted(set(classes or ()) | set(truth) | set(predicted))
    values, counts = np.unique(np.asarray(truth, dtype=str), return_counts=True)
    best = int(np.argmax(counts)) if len(counts) else 0
    return {
        "records": len(truth),
        "accuracy": round(accuracy(truth, predicted), 6),
        "classes": labels,
        "confusion": confusion_matrix(truth, predicted, labels).tolist(),
        "majority": {
            "class": str(values[best]) if len(values) else None,
            "share": round(float(counts[best] / len(truth)), 6) if len(truth) else None,
        },
    }


def evaluation_text(ev: dict[str, Any]) -> tuple[str, str | None, list[str]]:
    """An :func:`evaluation` in words, for the class site's log and the launcher's summary
    alike: the accuracy beside the majority baseline, a warning when below it (or None), and
    the confusion matrix's lines."""
    majority = ev["majority"]
    accuracy_ = (
        f"accuracy {ev['accuracy']:.4f} on {ev['records']} labelled records (predicting "
        f"{majority['class']!r} for all: {majority['share']:.4f})"
    )
    warning = None
    if majority["share"] is not None and ev["accuracy"] < majority["share"]:
        warning = (
            f"the accuracy {ev['accuracy']:.4f} is below {majority['share']:.4f}, that of "
            f"predicting {majority['class']!r} for every record: the tree does not generalise "
            "(a column with nearly one value per record?)"
        )
    return accuracy_, warning, format_confusion(ev["classes"], ev["confusion"])


def evaluation_log(ev: dict[str, Any]) -> list[str]:
    """The class site's log lines of an :func:`evaluation` (:func:`evaluation_text`)."""
    accuracy_, warning, matrix = evaluation_text(ev)
    warned = [f"warning: {warning}"] if warning else []
    return [accuracy_, *warned, "confusion, rows true, columns predicted:", *matrix]


def write_scored_predictions(
    path: str | Path,
    ids: Sequence[str],
    labels: Sequence[str],
    scores: Sequence[Mapping[str, float]],
    classes: Sequence[str],
    *,
    id_column: str | None,
) -> Path:
    """Write ``id,class,n(CLASS)...`` rows (private, 0600): each record's predicted class and
    the training records of each class at the node that classified it."""
    path = Path(path)
    with open_private(path, "w", newline="") as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow([id_column or "row", "class", *(f"n({c})" for c in classes)])
        for i, label, score in zip(ids, labels, scores, strict=True):
            out.writerow([i, label, *(_count(score.get(c, 0)) for c in classes)])
    return path


def _count(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{float(x):g}"
