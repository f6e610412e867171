"""The plain learners as scikit-learn estimators: fit on a DataFrame, predict, score, and the
same learners inside scikit-learn's cross_val_score and Pipeline.

Needs scikit-learn and pandas (``pip install scikit-learn pandas``; the ``test`` extra has
them). Run it: ``python docs/examples/estimators.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from mpc.learners import C45Classifier, ID3Classifier
from mpc.learners.estimator import as_table
from mpc.learners.evaluation import cross_validate, stratified_kfold
from mpc.learners.tree import render

# Quinlan's weather table with its numeric columns: temperature and humidity are numbers
# (continuous), outlook and windy are not (nominal)
X = pd.DataFrame(
    {
        "outlook": ["sunny", "sunny", "overcast", "rainy", "rainy", "rainy", "overcast",
                    "sunny", "sunny", "rainy", "sunny", "overcast", "overcast", "rainy"],
        "temperature": [85, 80, 83, 70, 68, 65, 64, 72, 69, 75, 75, 72, 81, 71],
        "humidity": [85, 90, 86, 96, 80, 70, 65, 95, 70, 80, 70, 90, 75, 91],
        "windy": [False, True, False, False, False, True, True,
                  False, False, False, True, True, False, True],
    }
)  # fmt: skip
y = pd.Series(["no", "no", "yes", "yes", "yes", "no", "yes",
               "no", "yes", "yes", "yes", "yes", "yes", "no"], name="play")  # fmt: skip

model = C45Classifier(pruning="none").fit(X, y)
print(model)
print(render(model.tree_))
kinds = dict(zip(X.columns, model.feature_kinds_, strict=True))
print("classes:", list(model.classes_), "columns:", kinds)
new = pd.DataFrame({"outlook": ["sunny", "rainy"], "temperature": [70, 70],
                    "humidity": [60, 60], "windy": [False, True]})  # fmt: skip
print("predict:", list(model.predict(new)))
print("predict_proba:", model.predict_proba(new).round(3).tolist())
print("score on the training rows:", model.score(X, y))

# A larger table of mixed columns, to cross-validate on: the class depends on age and region
rng = np.random.default_rng(7)
n = 300
people = pd.DataFrame(
    {
        "age": rng.integers(18, 80, n),
        "income": rng.normal(40_000, 12_000, n).round(-2),
        "region": rng.choice(["north", "south", "east", "west"], n),
    }
)
label = np.where((people["age"] > 45) ^ people["region"].isin(["north", "east"]), "buy", "skip")
flip = rng.random(n) < 0.1
label = np.where(flip, np.where(label == "buy", "skip", "buy"), label)
target = pd.Series(label, name="decision")

# scikit-learn's cross-validation on our folds gives our own evaluation's accuracies: ID3
# bins age and income on the training rows of each fold
folds = list(stratified_kfold(target, 5, seed=0))
theirs = cross_val_score(ID3Classifier(bins=4), people, target, cv=folds)
ours = cross_validate(lambda: ID3Classifier(bins=4), as_table(people, target), 5, seed=0)
print("cross_val_score:", theirs.round(4).tolist())
print("cross_validate: ", np.round(ours.fold_accuracies, 4).tolist())
print("the same:", bool(np.allclose(theirs, ours.fold_accuracies)))

# in a Pipeline: a step that drops a column, then the tree
pipe = Pipeline(
    [
        ("drop income", FunctionTransformer(lambda d: d.drop(columns=["income"]))),
        ("tree", C45Classifier(pruning="none", max_depth=3)),
    ]
)
accuracy = cross_val_score(pipe, people, target, cv=folds).mean()
print(f"pipeline accuracy (5 folds): {accuracy:.4f}")
