"""The plain (non-private) learners every private learner must match, and their tools.

* :mod:`mpc.learners.tree` — the tree (nodes, leaves, splits), rendering and JSON;
* :mod:`mpc.learners.id3` — ID3 (information gain, the shared tie-breaking);
* :mod:`mpc.learners.c45` — C4.5 (gain ratio, continuous splits, pruning);
* :mod:`mpc.learners.estimator` — both as scikit-learn estimators (``fit(X, y)``,
  ``predict``, ``predict_proba``, ``score``, ``get_params``, DataFrames and arrays);
* :mod:`mpc.learners.evaluation` — splits, cross-validation, accuracy, confusion matrices;
* :mod:`mpc.learners.model_file` — saved models: versioned JSON parts bound by commitments;
* :mod:`mpc.learners.plot` — pictures of trees (matplotlib), nodes coloured by owner;
* :mod:`mpc.learners.adaptive_modification` — Chang & Tracy's release that blocks what trees
  learned on it can infer of confidential cells (a data owner's tool, no network).

::

    from mpc.learners import C45Classifier, ID3Classifier
    model = ID3Classifier(max_depth=3).fit(X, y)
"""

from mpc.learners.c45 import C45Classifier
from mpc.learners.criteria import CRITERIA
from mpc.learners.estimator import EstimatorInputError, NotFittedError
from mpc.learners.id3 import ID3Classifier

__all__ = ["CRITERIA", "C45Classifier", "EstimatorInputError", "ID3Classifier", "NotFittedError"]
