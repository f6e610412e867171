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
as the private learners expect.

Every wrong input is an :class:`EstimatorInputError`, which is both the project's
:class:`~mpc.errors.ConfigError` and the ``ValueError`` scikit-learn expects, naming the
parameter or the column; ``y`` must hold class labels (a ``y`` of non-integer numbers is
refused as continuous, as scikit-learn's classifiers refuse it). Using a learner before
``fit`` raises :class:`NotFittedError` (a ``ValueError`` and ``AttributeError``, and
scikit-learn's own ``NotFittedError`` when scikit-learn is loaded). The learners pass
scikit-learn's ``check_estimator``.

Learned besides the tree: ``feature_importances_`` (each attribute's share of the total
entropy decrease weighted by the rows at the node, over every split on it, as scikit-learn's
trees define it), ``get_depth()`` and ``get_n_leaves()``.
"""

from __future__ import annotations

import inspect
import math
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from numbers import Number
from typing import Any, ClassVar, Self

import numpy as np

from mpc.datasets import MISSING, Table
from mpc.datasets.csv_files import nearly_unique_nominal
from mpc.errors import ConfigError
from mpc.learners.evaluation import (
    predict_proba_table,
    predict_table,
    unseen_stops,
    unseen_warning,
)
from mpc.learners.tree import Leaf, Node, Split, depth, leaf_count, nodes

__all__ = [
    "DataConversionWarning",
    "EstimatorInputError",
    "GeneralisationWarning",
    "NotFittedError",
    "PlainTreeClassifier",
    "UnseenValueWarning",
    "as_table",
    "row_weights",
]


class EstimatorInputError(ConfigError, ValueError):
    """A wrong ``X``, ``y`` or parameter given to a learner: a
    :class:`~mpc.errors.ConfigError`, and the ``ValueError`` scikit-learn expects."""


class NotFittedError(EstimatorInputError, AttributeError):
    """A learner used before ``fit``."""


class DataConversionWarning(UserWarning):
    """``y`` was converted, as a column vector to a 1-D array."""


class UnseenValueWarning(UserWarning):
    """Rows to classify hold values that training never gave a branch: each is given the
    majority class of the node where it stopped."""


class GeneralisationWarning(UserWarning):
    """The rows a tree is fitted on will give a tree that does not generalise: a nominal
    column with nearly one value per row, or a single class."""


def _is_table(X: Any) -> bool:
    return hasattr(X, "attributes") and hasattr(X, "kinds") and hasattr(X, "n_rows")


def _warn_unseen(tree: Any, table: Table) -> None:
    line = unseen_warning(unseen_stops(tree, table), table.n_rows)
    if line:
        warnings.warn(line, UnseenValueWarning, stacklevel=3)


def _warn_fit(table: Table) -> None:
    """The fitting rows' warnings: nearly unique nominal columns, one class."""
    unique = nearly_unique_nominal(table)
    if unique:
        listed = ", ".join(f"{a} ({n} values in {table.n_rows} rows)" for a, n in unique)
        warnings.warn(
            f"nominal columns with nearly one value per row: {listed}; a split on one fits "
            "these rows and no new one: leave them out, or give them as numbers (kinds=)",
            GeneralisationWarning,
            stacklevel=3,
        )
    if len(table.target) and len(set(np.asarray(table.target, dtype=str).tolist())) == 1:
        warnings.warn(
            f"y has one class ({table.target[0]!r}) in every row: the tree is a single leaf",
            GeneralisationWarning,
            stacklevel=3,
        )


def _sklearn_kind(ours: type[Any], name: str) -> type[Any]:
    """``ours``, made also an instance of ``sklearn.exceptions.<name>`` when scikit-learn is
    loaded, so that its ``except`` clauses and checks catch it; scikit-learn is never
    imported here."""
    theirs = getattr(sys.modules.get("sklearn.exceptions"), name, None)
    return ours if theirs is None else _joined(ours, theirs)


#: the joined classes made so far, so that one class stands for each pair
_JOINED: dict[tuple[type[Any], type[Any]], type[Any]] = {}


def _joined(ours: type[Any], theirs: type[Any]) -> type[Any]:
    key = (ours, theirs)
    if key not in _JOINED:
        _JOINED[key] = type(ours.__name__, (ours, theirs), {"__module__": ours.__module__})
    return _JOINED[key]


def _error(message: str) -> EstimatorInputError:
    return EstimatorInputError(message)


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
    """A continuous column as float64 (NaN missing); a value that is no number, or an
    infinity, is an error naming the column and the row."""
    values = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if values.dtype.kind in "iuf":
        out = values.astype(np.float64)
    else:
        out = np.empty(len(values), dtype=np.float64)
        for i, v in enumerate(values.tolist()):
            if _is_missing(v):
                out[i] = np.nan
            elif _is_number(v):
                out[i] = float(v)
            else:
                raise _error(
                    f"column {name!r} is continuous, but row {i} holds {v!r}; give numbers "
                    "(None or NaN for a missing value), or read the column as nominal with "
                    f"kinds={{{name!r}: 'nominal'}}"
                )
    infinite = np.flatnonzero(np.isinf(out))
    if len(infinite):
        i = int(infinite[0])
        raise _error(
            f"column {name!r} is continuous, but row {i} holds {out[i]}: Input X contains "
            "infinity; give finite numbers (None or NaN for a missing value)"
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


def _is_sparse(X: Any) -> bool:
    """Whether ``X`` is a SciPy sparse matrix or array (told without importing SciPy)."""
    return type(X).__module__.startswith("scipy.sparse") or (
        hasattr(X, "tocsr") and hasattr(X, "nnz")
    )


def _as_array(X: Any) -> np.ndarray:
    """``X`` as a 2-D numpy array: sparse, complex, ragged or not 2-D input is refused."""
    if _is_sparse(X):
        raise _error(
            "sparse input is not supported: a tree reads every cell; give X.toarray() (a dense "
            "array) or a DataFrame"
        )
    try:
        array = np.asarray(X)
    except ValueError as exc:  # ragged rows
        raise _error(f"X must be a 2-D array or a list of rows of equal length: {exc}") from None
    if array.dtype.kind == "c" or (
        array.dtype.kind == "O" and any(isinstance(v, complex) for v in array.ravel().tolist())
    ):
        raise _error("Complex data not supported: give real numbers or labels")
    if array.ndim != 2:
        raise _error(
            f"X must be 2-D (rows x columns), got shape {array.shape}; Reshape your data: a "
            "single column is X.reshape(-1, 1), a single row X.reshape(1, -1)"
        )
    if array.shape[1] == 0:
        raise _error(
            f"X has 0 feature(s) (shape={array.shape}) while a minimum of 1 is required: a "
            "tree needs at least one attribute"
        )
    if array.shape[0] == 0:
        raise _error(f"X has 0 rows (shape={array.shape}); a tree needs at least one row")
    return array


def _array_columns(X: Any) -> tuple[list[str], list[np.ndarray], list[str]]:
    """The names (``x0``, ...), raw columns and inferred kinds of a 2-D array."""
    array = _as_array(X)
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
                raise _error(f"kinds names column {key!r}, which X does not have ({names})")
            out[j] = kind
    else:
        if isinstance(kinds, str) or len(kinds) != len(names):
            raise _error(
                f"kinds must give one kind per column of X ({len(names)}), or a dict of some "
                f"columns; got {kinds!r}"
            )
        out = list(kinds)
    bad = [k for k in out if k not in _KINDS]
    if bad:
        raise _error(f"kinds must be 'nominal' or 'continuous', got {bad[0]!r}")
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
        raise _error(
            f"X has 0 feature(s) (shape=({len(X)}, 0)) while a minimum of 1 is required: a "
            "tree needs at least one attribute"
        )
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
            raise _error(f"X has {n} rows but y has {len(labels)} labels")
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


def _labels(y: Any, *, warn: bool = False) -> np.ndarray:
    """``y`` as a 1-D array of class labels. A column vector is taken (with a
    :class:`DataConversionWarning` when ``warn``); NaN, infinity and non-integer numbers (a
    continuous target) are refused."""
    if _is_sparse(y):
        raise _error("sparse y is not supported: give a 1-D array of labels")
    labels = np.asarray(y)
    if labels.ndim == 2 and labels.shape[1] == 1:
        if warn:
            warnings.warn(
                _sklearn_kind(DataConversionWarning, "DataConversionWarning")(
                    "A column-vector y was passed when a 1d array was expected: y is read as "
                    "y.ravel()"
                ),
                stacklevel=4,
            )
        labels = labels[:, 0]
    if labels.ndim != 1:
        raise _error(f"y should be a 1d array, one label per row of X; got shape {labels.shape}")
    if labels.dtype.kind == "c":
        raise _error("Complex data not supported: y must hold class labels")
    if labels.dtype.kind == "f":
        if not np.isfinite(labels).all():
            raise _error("Input y contains NaN or infinity: every row needs its class label")
        if (labels != np.round(labels)).any():
            raise _error(
                "Unknown label type: continuous. y holds numbers that are not whole: a "
                "classification tree needs class labels, not a quantity to regress (bin y "
                "first, or give the labels as integers or text)"
            )
    elif labels.dtype.kind == "O":
        floats = [v for v in labels.tolist() if isinstance(v, float | np.floating)]
        if any(not math.isfinite(v) for v in floats):
            raise _error("Input y contains NaN or infinity: every row needs its class label")
    return labels


def row_weights(labels: Any, sample_weight: Any, class_weight: Any) -> np.ndarray | None:
    """Each row's weight: its ``sample_weight`` (default 1) times its class's weight in
    ``class_weight``: a mapping from label to weight (a label it does not name weighs 1) or
    ``"balanced"``, ``n / (k * n_c)`` for a class of ``n_c`` of the ``n`` rows among ``k``
    classes, as scikit-learn defines it, but with ``n`` and ``n_c`` the sums of the sample
    weights (so that a weight of 2 stays a row repeated; scikit-learn counts rows). None
    when every row weighs 1."""
    labels = np.asarray(labels)
    n = len(labels)
    w = np.ones(n, dtype=np.float64)
    if sample_weight is not None:
        try:
            given = np.asarray(sample_weight, dtype=np.float64)
        except (TypeError, ValueError):
            raise _error("sample_weight must hold numbers, one per row") from None
        if given.ndim == 0:
            given = np.full(n, float(given))
        if given.ndim != 1 or len(given) != n:
            raise _error(
                f"sample_weight.shape == {given.shape}, expected ({n},): one weight per row"
            )
        if not np.isfinite(given).all() or (given < 0).any():
            raise _error("sample_weight must be finite and non-negative")
        w = w * given
    if class_weight is not None:
        text = np.asarray([str(c) for c in labels.tolist()], dtype=str)
        classes, codes = np.unique(text, return_inverse=True)
        if isinstance(class_weight, str):
            if class_weight != "balanced":
                raise _error(
                    f"class_weight must be None, 'balanced' or a mapping, got {class_weight!r}"
                )
            totals = np.bincount(codes, weights=w, minlength=len(classes))
            of = {str(c): float(w.sum() / (len(classes) * t)) if t > 0 else 0.0
                  for c, t in zip(classes, totals, strict=True)}  # fmt: skip
        elif isinstance(class_weight, Mapping):
            of = {str(c): float(v) for c, v in class_weight.items()}
            if any(not np.isfinite(v) or v < 0 for v in of.values()):
                raise _error("class_weight's weights must be finite and non-negative")
        else:
            raise _error(
                f"class_weight must be None, 'balanced' or a mapping, got {class_weight!r}"
            )
        w = w * np.asarray([of.get(str(c), 1.0) for c in text], dtype=np.float64)
    if n and w.sum() <= 0:
        raise _error("the weights of the rows sum to zero: nothing to learn from")
    return None if (w == 1.0).all() else w


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
                raise _error(
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
        sample_weight: Any = None,
        *,
        kinds: Sequence[str] | Mapping[str | int, str] | None = None,
        **fit_params: Any,
    ) -> Self:
        """Learn the tree from a :class:`~mpc.datasets.Table` (``y`` omitted), or from ``X``
        (a DataFrame or a 2-D array) and its labels ``y``; ``kinds`` overrides the kinds read
        from ``X`` (see the module docstring). ``sample_weight`` (one non-negative number per
        row) and the learner's ``class_weight`` weigh the rows as scikit-learn's trees do:
        every class count is a sum of weights (:func:`row_weights`). Other keyword arguments
        go to the learner's own fit: ``attribute_order`` and ``sites`` for ID3 (the private
        learners' tie-breaking order and owners), ``prune_rows`` for C4.5 (the rows that
        reduced-error pruning holds out). Returns the learner."""
        if y is None and (hasattr(X, "attributes") and hasattr(X, "target")):
            weights = row_weights(X.target, sample_weight, getattr(self, "class_weight", None))
        elif y is not None:
            weights = row_weights(_labels(y), sample_weight, getattr(self, "class_weight", None))
        else:
            weights = None
        if weights is not None:
            fit_params["weights"] = weights
        if y is None:
            if not (hasattr(X, "attributes") and hasattr(X, "kinds") and hasattr(X, "n_rows")):
                raise _error(
                    f"{type(self).__name__} requires y to be passed, but the target y is None: "
                    f"fit needs a Table, or X and y; got {type(X).__name__} without y"
                )
            if kinds is not None:
                raise _error("kinds goes with X and y; a Table has its kinds already")
            self._fit_table(X, **fit_params)
            self._labels = None
            self.feature_names_in_ = np.array(X.attributes, dtype=object)
            self.n_features_in_ = len(X.attributes)
            self.feature_kinds_ = tuple(X.kinds)
            return self
        labels = _labels(y, warn=True)
        table = as_table(X, y, kinds=kinds)
        try:
            classes = np.unique(labels)
        except TypeError:
            raise _error("the labels y cannot be sorted: give labels of one type") from None
        if len({str(c) for c in classes.tolist()}) != len(classes):
            raise _error(f"two labels of y read as the same text: {classes.tolist()}")
        _warn_fit(table)
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
            raise _sklearn_kind(NotFittedError, "NotFittedError")(
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
                raise _error(
                    f"this {type(self).__name__} was fitted on an array without column names; "
                    "give an array (X.to_numpy()) of its columns in the same order"
                )
            have = [str(c) for c in X.columns]
            missing = [a for a in wanted if a not in have]
            if missing:
                raise _error(f"X lacks the columns {missing} that the tree was fitted on")
            X = X[[c for a in wanted for c in X.columns if str(c) == a]]
        else:
            X = _as_array(X)
            if X.shape[1] != self.n_features_in_:
                raise _error(
                    f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                    f"{self.n_features_in_} features as input (X has shape {X.shape}; the "
                    f"tree was fitted on {self.n_features_in_} columns)"
                )
        table = as_table(X, kinds=list(self.feature_kinds_))
        if hasattr(self, "feature_names_in_"):
            table = replace(table, attributes=tuple(str(a) for a in self.feature_names_in_))
        return self._transform(table)

    def _transform(self, table: Table) -> Table:
        """The rows as the tree reads them (ID3 bins continuous columns here)."""
        return table

    def predict(self, X: Any) -> np.ndarray:
        """The class of every row of ``X`` (a Table, a DataFrame or a 2-D array). Rows that
        hold a value never seen in training where the tree splits on it get that node's
        majority class, and an :class:`UnseenValueWarning` counts them."""
        rows = self._rows(X)
        if not _is_table(X):  # a Table is the command line's, which says it in its own words
            _warn_unseen(self.tree_, rows)
        predicted = predict_table(self.tree_, rows)
        if self._labels is None:
            return predicted
        _, _, classes = self._labels
        by_name = {str(c): c for c in classes.tolist()}
        return np.array([by_name[p] for p in predicted.tolist()], dtype=classes.dtype)

    def unseen_values(self, X: Any) -> dict[str, int]:
        """How many rows of ``X`` hold, at a node they reach, a value training never gave a
        branch (each is given that node's majority class), by attribute."""
        return unseen_stops(self.tree_, self._rows(X))

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of every row, one column per class in ``classes_`` order (the
        class counts of the leaf a row reaches; a missing value spreads a row over the
        branches by their training weight)."""
        table = self._rows(X)
        if not _is_table(X):
            _warn_unseen(self.tree_, table)
        if self._labels is None:
            return predict_proba_table(self.tree_, table, list(self.classes_))
        names, order, _ = self._labels
        return predict_proba_table(self.tree_, table, names)[:, order]

    # ------------------------------------------------------------------ the tree

    @property
    def feature_importances_(self) -> np.ndarray:
        """Each attribute's importance, in ``n_features_in_`` order: the entropy decrease of
        every split on it, weighted by the rows (or fractional row weights) at the node,
        summed and normalised to sum to 1 (all zeros for a single leaf)."""
        self._check_fitted()
        names = [str(a) for a in getattr(self, "feature_names_in_", [])] or [
            f"x{j}" for j in range(self.n_features_in_)
        ]
        out = np.zeros(len(names))
        index = {a: j for j, a in enumerate(names)}
        for node in nodes(self.tree_):
            if isinstance(node, Split):
                out[index[node.attribute]] += max(_entropy_decrease(node), 0.0)
        total = out.sum()
        return out / total if total > 0 else out

    def get_depth(self) -> int:
        """The depth of the tree: the most splits from the root to a leaf (0: one leaf)."""
        self._check_fitted()
        return depth(self.tree_)

    def get_n_leaves(self) -> int:
        """The number of leaves of the tree."""
        self._check_fitted()
        return leaf_count(self.tree_)

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """The accuracy of ``predict(X)`` against ``y`` (weighted by ``sample_weight``)."""
        truth = np.asarray(_labels(y), dtype=str)
        hits = (np.asarray(self.predict(X), dtype=str) == truth).astype(np.float64)
        if len(hits) == 0:
            raise _error("score needs at least one row")
        return float(np.average(hits, weights=sample_weight))


def _weighted_entropy(counts: Mapping[str, float]) -> float:
    """``n * H(counts)`` in bits, ``n`` the total weight."""
    weights = np.array([w for w in counts.values() if w > 0], dtype=np.float64)
    n = weights.sum()
    return 0.0 if n <= 0 else float(-(weights * np.log2(weights / n)).sum())


def _entropy_decrease(node: Split) -> float:
    """The weighted entropy a split removes: its node's minus its children's."""
    children = sum(
        _weighted_entropy(child.counts) for child in node.children.values()
        if isinstance(child, Leaf | Split)
    )  # fmt: skip
    return _weighted_entropy(node.counts) - children
