"""Datasets: the UCI tables of the experiments, any CSV file, synthetic tables, binning, and
the vertical partitioning of a table over ``k`` sites.

* :mod:`mpc.datasets.table` — :class:`Table` (one dataset in memory, column by column), the
  column kinds and :class:`DataError`;
* :mod:`mpc.datasets.uci` — :func:`load_dataset` for the datasets of :data:`KNOWN_DATASETS`
  from the data directory (:func:`resolve_data_dir`), each checked against its
  ``schema.json``; :func:`weather`, embedded in the package (no data directory needed);
* :mod:`mpc.datasets.csv_files` — :func:`load_csv` (any CSV with a header row) and
  :func:`load_party_csv` (one party's own file, with its record ids);
* :mod:`mpc.datasets.fields` — the steps both readers share: fields to checked columns;
* :mod:`mpc.datasets.planted` — :func:`synthetic`: rows labelled by a planted tree;
* :mod:`mpc.datasets.discretize` — :class:`Discretizer`: equal-frequency bins learned on
  training rows only, for the ID3 family;
* :mod:`mpc.datasets.vertical` — :func:`partition`, :func:`split_vertically`,
  :func:`join_sites`;
* :mod:`mpc.datasets.party_files` — :func:`write_party_files`: one CSV file per party, as
  organisations that never pooled their data would each hold it (``mpc datasets split``).

Every problem with a data file raises :class:`DataError`, whose message names the file, the
line (1-based, as an editor shows it) and the column (name and 0-based field index, as in
``schema.json``)::

    car/car.data:7: column 'buying' (field 1): value 'cheap' is not one of the values declared
    in car/schema.json (high, low, med, vhigh); fix the file or add the value there

The names listed in ``__all__`` are the public surface: import them from here.
"""

from mpc.datasets.csv_files import (
    FEW_VALUES,
    PartyTable,
    csv_header,
    few_valued_continuous,
    kinds_warning,
    load_csv,
    load_party_csv,
)
from mpc.datasets.discretize import Discretizer
from mpc.datasets.party_files import PartyFile, write_party_files
from mpc.datasets.planted import synthetic
from mpc.datasets.table import (
    CONTINUOUS,
    DATA_DIR_ENV,
    KINDS,
    MISSING,
    NO_DATA_DIR_ENV,
    NOMINAL,
    DataError,
    Table,
)
from mpc.datasets.uci import (
    KNOWN_DATASETS,
    DatasetInfo,
    available_datasets,
    default_data_dir,
    load_dataset,
    resolve_data_dir,
    weather,
)
from mpc.datasets.vertical import Partition, SiteData, join_sites, partition, split_vertically

__all__ = [
    "CONTINUOUS",
    "DATA_DIR_ENV",
    "FEW_VALUES",
    "KINDS",
    "KNOWN_DATASETS",
    "MISSING",
    "NOMINAL",
    "NO_DATA_DIR_ENV",
    "DataError",
    "DatasetInfo",
    "Discretizer",
    "Partition",
    "PartyFile",
    "PartyTable",
    "SiteData",
    "Table",
    "available_datasets",
    "csv_header",
    "default_data_dir",
    "few_valued_continuous",
    "join_sites",
    "kinds_warning",
    "load_csv",
    "load_dataset",
    "load_party_csv",
    "partition",
    "resolve_data_dir",
    "split_vertically",
    "synthetic",
    "weather",
    "write_party_files",
]
