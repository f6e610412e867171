"""The plain tree learners as scikit-learn estimators: one base class that
:class:`~mpc.learners.id3.ID3Classifier` and :class:`~mpc.learners.c45.C45Classifier` share.

A learner takes the framework's :class:`~mpc.datasets.Table`, or ``X, y`` as scikit-learn
does::

    from mpc.learners import C45Classifier
    model = C45Classifier(pruning="none").fit(X, y)    # X: a pandas DataFrame or a 2-D array
    model.predict(X_new)          # labels of y's type
    model.predict_proba(X_new)    # one column per class, in ``model.classes_`` order
    model.score(X_test, y_test)   # accuracy
    model.get_params(), model.set_params(max_depth=3)

so it works inside ``sklearn.model_selection.cross_val_score``, ``sklearn.pipeline.Pipeline``
and ``sklearn.base.clone``. scikit-learn itself is not needed to use the learners.

How ``X`` is read (:func:`as_table`):

* a **pandas DataFrame**: its column names are the attribute names; a column of a numeric
  dtype (not bool) is continuous, with NaN missing; any other column is nominal: each value
  as ``str``, a missing one (None, NaN) as ``"?"``;
* a **2-D array** (or a list of rows): the columns are named ``x0``, ``x1``, ...; a numeric
  array is all continuous; in an object array, a column whose known values are all numbers
  (int or float, not bool, not str) is continuous, any other nominal;
* ``fit(X, y, kinds=...)`` overrides the inferred kinds: one ``"nominal"`` or
  ``"continuous"`` per column, or a dict of some columns by name (or by index for an array),
  e.g. ``kinds={"grade": "nominal"}`` for integer-coded categories.

Prediction reads new rows with the kinds learned in ``fit`` (a DataFrame by column name, an
array by position). ``y`` may hold labels of any type: ``classes_`` are its distinct values,
sorted (``numpy.unique``), and ``predict`` returns them in that type. Fitted on a
:class:`~mpc.datasets.Table`, ``classes_`` is the list of its class labels (``str``, sorted),
as the private learners expect. Every wrong input is a :class:`~mpc.errors.ConfigError` that
names the parameter or the column.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from numbers import Number
from typing import Any, ClassVar, Self

import numpy as np

from mpc.datasets import MISSING, Table
from mpc.errors import ConfigError
from mpc.learners.evaluation import predict_proba_table, predict_table
from mpc.learners.tree import Node

__all__ = ["PlainTreeClassifier", "as_table"]

_KINDS = ("nominal", "continuous")


def _is_frame(X: Any) -> bool:
    """Whether ``X`` is a pandas DataFrame (told without importing pandas)."""
    return hasattr(X, "columns") and hasattr(X, "iloc") and hasattr(X, "dtypes")


def _is_number(value: Any) -> bool:
    return isinstance(value, Number) and not isinstance(value, bool | np.bool_)


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float | np.floating) and math.isnan(value))


def _nominal(values: Sequence[Any] | np.ndarray) -> np.ndarray:
    """A nominal column: every value as ``str``, a missing one as ``"?"``."""
    return np.array([MISSING if _is_missing(v) else str(v) for v in values], dtype=object)


def _continuous(values: Sequence[Any] | np.ndarray, name: str) -> np.ndarray:
    """A continuous column as float64 (NaN missing); a value that is no number is an error."""
    values = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if values.dtype.kind in "iuf":
        return values.astype(np.float64)
    out = np.empty(len(values), dtype=np.float64)
    for i, v in enumerate(values.tolist()):
        if _is_missing(v):
            out[i] = np.nan
        elif _is_number(v):
            out[i] = float(v)
        else:
            raise ConfigError(
                f"column {name!r} is continuous, but row {i} holds {v!r}; give numbers (None or "
                "NaN for a missing value), or read the column as nominal with "
                f"kinds={{{name!r}: 'nominal'}}"
            )
    return out


def _frame_columns(X: Any) -> tuple[list[str], list[np.ndarray], list[str]]:
    """The names, raw columns and inferred kinds of a DataFrame."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    names = [str(c) for c in X.columns]
    columns, kinds = [], []
    for c in X.columns:
        series = X[c]
        numeric = is_numeric_dtype(series.dtype) and not is_bool_dtype(series.dtype)
        if numeric:
            columns.append(series.to_numpy(dtype=np.float64, na_value=np.nan))
        else:
            columns.append(series.to_numpy(dtype=object))
        kinds.append("continuous" if numeric else "nominal")
    return names, columns, kinds


def _array_columns(X: Any) -> tuple[list[str], list[np.ndarray], list[str]]:
    """The names (``x0``, ...), raw columns and inferred kinds of a 2-D array."""
    try:
        array = np.asarray(X)
    except ValueError as exc:  # ragged rows
        raise ConfigError(
            f"X must be a 2-D array or a list of rows of equal length: {exc}"
        ) from None
    if array.ndim != 2:
        raise ConfigError(
            f"X must be 2-D (rows x columns), got shape {array.shape}; "
            "a single column is X.reshape(-1, 1)"
        )
    names = [f"x{j}" for j in range(array.shape[1])]
    columns = [array[:, j] for j in range(array.shape[1])]
    if array.dtype.kind in "iuf":
        return names, columns, ["continuous"] * len(columns)
    kinds = []
    for col in columns:
        known = [v for v in col.tolist() if not _is_missing(v)]
        kinds.append("continuous" if known and all(map(_is_number, known)) else "nominal")
    return names, columns, kinds


def _given_kinds(
    kinds: Sequence[str] | Mapping[str | int, str] | None, names: list[str], inferred: list[str]
) -> list[str]:
    """The inferred kinds with those given in ``kinds`` put in."""
    out = list(inferred)
    if kinds is None:
        return out
    if isinstance(kinds, Mapping):
        for key, kind in kinds.items():
            if isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(names):
                j = key
            elif key in names:
                j = names.index(str(key))
            else:
                raise ConfigError(f"kinds names column {key!r}, which X does not have ({names})")
            out[j] = kind
    else:
        if isinstance(kinds, str) or len(kinds) != len(names):
            raise ConfigError(
                f"kinds must give one kind per column of X ({len(names)}), or a dict of some "
                f"columns; got {kinds!r}"
            )
        out = list(kinds)
    bad = [k for k in out if k not in _KINDS]
    if bad:
        raise ConfigError(f"kinds must be 'nominal' or 'continuous', got {bad[0]!r}")
    return out


def as_table(
    X: Any,
    y: Any = None,
    *,
    kinds: Sequence[str] | Mapping[str | int, str] | None = None,
    name: str = "X",
) -> Table:
    """``X`` (a DataFrame or a 2-D array) and the labels ``y`` as a
    :class:`~mpc.datasets.Table`, read as the module docstring says. Without ``y`` the table
    has no class column (rows to classify)."""
    names, raw, inferred = _frame_columns(X) if _is_frame(X) else _array_columns(X)
    if not names:
        raise ConfigError("X has no columns; a tree needs at least one attribute")
    chosen = _given_kinds(kinds, names, inferred)
    columns = [
        _continuous(col, n) if kind == "continuous" else _nominal(col)
        for n, col, kind in zip(names, raw, chosen, strict=True)
    ]
    n = len(columns[0])
    target = np.array([], dtype=object)
    class_name = ""
    if y is not None:
        labels = _labels(y)
        if len(labels) != n:
            raise ConfigError(f"X has {n} rows but y has {len(labels)} labels")
        target = np.array([str(v) for v in labels.tolist()], dtype=object)
        class_name = str(getattr(y, "name", None) or "class")
    return Table(
        name=name,
        attributes=tuple(names),
        kinds=tuple(chosen),
        columns=tuple(columns),
        target=target,
        class_name=class_name,
        source="arrays" if not _is_frame(X) else "DataFrame",
    )


def _labels(y: Any) -> np.ndarray:
    """``y`` as a 1-D array (a column vector is accepted)."""
    labels = np.asarray(y)
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim != 1:
        raise ConfigError(f"y must be 1-D, one label per row of X, got shape {labels.shape}")
    return labels


class PlainTreeClassifier:
    """The scikit-learn side of a plain tree learner (see the module docstring).

    A subclass takes its parameters keyword-only in ``__init__`` and only stores them there,
    and learns from a :class:`~mpc.datasets.Table` in ``_fit_table(table, **fit_params)``,
    setting ``tree_`` and ``classes_`` (the class labels as ``str``, sorted). This class reads
    ``X, y`` into a table and gives ``fit``, ``predict``, ``predict_proba``, ``score``,
    ``get_params`` and ``set_params``.

    Learned besides: ``n_features_in_``, ``feature_names_in_`` (when ``X`` had column names:
    a DataFrame, or a Table) and ``feature_kinds_`` (each column's kind as ``fit`` read it).
    """

    #: scikit-learn's ``is_classifier`` (before its tags) reads this
    _estimator_type: ClassVar[str] = "classifier"
    #: learns from a table (the subclass's own fit)
    _fit_table: Callable[..., Any]
    #: learned by ``fit``: the tree, and the classes (``str`` from a Table, y's type else)
    tree_: Node
    classes_: Any
    #: fitted on X, y: the tree's class names, the column of each class, the classes
    _labels: tuple[list[str], list[int], np.ndarray] | None = None

    # ------------------------------------------------------------------ parameters

    @classmethod
    def _param_names(cls) -> list[str]:
        """The parameters: the keyword-only arguments of ``__init__``, in order."""
        signature = inspect.signature(cls.__init__)
        return [p.name for p in signature.parameters.values() if p.kind == p.KEYWORD_ONLY]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The parameters by name (``deep`` is accepted for scikit-learn: nothing is nested)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> Self:
        """Set parameters by name; returns the learner. Checked when ``fit`` runs."""
        valid = self._param_names()
        for key, value in params.items():
            if key not in valid:
                raise ConfigError(
                    f"{type(self).__name__} has no parameter {key!r}; its parameters are {valid}"
                )
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        defaults = {
            p.name: p.default
            for p in inspect.signature(type(self).__init__).parameters.values()
            if p.kind == p.KEYWORD_ONLY
        }
        changed = [
            f"{k}={v!r}" for k, v in self.get_params().items() if defaults.get(k, object()) != v
        ]
        return f"{type(self).__name__}({', '.join(changed)})"

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's tags (called by scikit-learn only, which is then installed): a
        classifier that takes strings, categories and NaN."""
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags

        return Tags(
            estimator_type="classifier",
            target_tags=TargetTags(required=True),
            classifier_tags=ClassifierTags(),
            input_tags=InputTags(string=True, categorical=True, allow_nan=True),
        )

    # ------------------------------------------------------------------ fit

    def fit(
        self,
        X: Any,
        y: Any = None,
        *,
        kinds: Sequence[str] | Mapping[str | int, str] | None = None,
        **fit_params: Any,
    ) -> Self:
        """Learn the tree from a :class:`~mpc.datasets.Table` (``y`` omitted), or from ``X``
        (a DataFrame or a 2-D array) and its labels ``y``; ``kinds`` overrides the kinds read
        from ``X`` (see the module docstring). Other keyword arguments go to the learner's
        own fit: ``attribute_order`` and ``sites`` for ID3 (the private learners'
        tie-breaking order and owners), ``prune_rows`` for C4.5 (the rows that reduced-error
        pruning holds out). Returns the learner."""
        if y is None:
            if not (hasattr(X, "attributes") and hasattr(X, "kinds") and hasattr(X, "n_rows")):
                raise ConfigError(
                    f"{type(self).__name__}.fit needs a Table, or X and y; got "
                    f"{type(X).__name__} without y"
                )
            if kinds is not None:
                raise ConfigError("kinds goes with X and y; a Table has its kinds already")
            self._fit_table(X, **fit_params)
            self._labels = None
            self.feature_names_in_ = np.array(X.attributes, dtype=object)
            self.n_features_in_ = len(X.attributes)
            self.feature_kinds_ = tuple(X.kinds)
            return self
        table = as_table(X, y, kinds=kinds)
        labels = _labels(y)
        try:
            classes = np.unique(labels)
        except TypeError:
            raise ConfigError("the labels y cannot be sorted: give labels of one type") from None
        if len({str(c) for c in classes.tolist()}) != len(classes):
            raise ConfigError(f"two labels of y read as the same text: {classes.tolist()}")
        self._fit_table(table, **fit_params)
        names = list(self.classes_)  # str, sorted: the tree's own class names
        self._labels = (names, [names.index(str(c)) for c in classes.tolist()], classes)
        self.classes_ = classes
        self.n_features_in_ = len(table.attributes)
        self.feature_kinds_ = tuple(table.kinds)
        if _is_frame(X):
            self.feature_names_in_ = np.array(table.attributes, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        return self

    # ------------------------------------------------------------------ use

    def _check_fitted(self) -> None:
        if not hasattr(self, "tree_"):
            raise ConfigError(
                f"this {type(self).__name__} is not fitted yet; call fit(X, y) or fit(table) first"
            )

    def _rows(self, X: Any) -> Table:
        """The rows to classify as a table with the attributes and kinds of ``fit``."""
        self._check_fitted()
        if isinstance(X, Table):
            return self._transform(X)
        if _is_frame(X):
            wanted = [str(a) for a in getattr(self, "feature_names_in_", [])]
            if not wanted:
                raise ConfigError(
                    f"this {type(self).__name__} was fitted on an array without column names; "
                    "give an array (X.to_numpy()) of its columns in the same order"
                )
            have = [str(c) for c in X.columns]
            missing = [a for a in wanted if a not in have]
            if missing:
                raise ConfigError(f"X lacks the columns {missing} that the tree was fitted on")
            X = X[[c for a in wanted for c in X.columns if str(c) == a]]
        else:
            width = np.shape(X)[1] if np.ndim(X) == 2 else None
            if width != self.n_features_in_:
                raise ConfigError(
                    f"X has shape {np.shape(X)}; the tree was fitted on {self.n_features_in_} "
                    "columns"
                )
        table = as_table(X, kinds=list(self.feature_kinds_))
        if hasattr(self, "feature_names_in_"):
            table = replace(table, attributes=tuple(str(a) for a in self.feature_names_in_))
        return self._transform(table)

    def _transform(self, table: Table) -> Table:
        """The rows as the tree reads them (ID3 bins continuous columns here)."""
        return table

    def predict(self, X: Any) -> np.ndarray:
        """The class of every row of ``X`` (a Table, a DataFrame or a 2-D array)."""
        rows = self._rows(X)
        predicted = predict_table(self.tree_, rows)
        if self._labels is None:
            return predicted
        _, _, classes = self._labels
        by_name = {str(c): c for c in classes.tolist()}
        return np.array([by_name[p] for p in predicted.tolist()], dtype=classes.dtype)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of every row, one column per class in ``classes_`` order (the
        class counts of the leaf a row reaches; a missing value spreads a row over the
        branches by their training weight)."""
        table = self._rows(X)
        if self._labels is None:
            return predict_proba_table(self.tree_, table, list(self.classes_))
        names, order, _ = self._labels
        return predict_proba_table(self.tree_, table, names)[:, order]

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """The accuracy of ``predict(X)`` against ``y`` (weighted by ``sample_weight``)."""
        truth = np.asarray(_labels(y), dtype=str)
        hits = (np.asarray(self.predict(X), dtype=str) == truth).astype(np.float64)
        if len(hits) == 0:
            raise ConfigError("score needs at least one row")
        return float(np.average(hits, weights=sample_weight))
