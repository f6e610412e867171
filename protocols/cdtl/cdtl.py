"""Collaborative decision tree learning on outsourced anatomized data — Mancuhan & Clifton,
*Decision Tree Classification on Outsourced Data*: the protocol between the client and the
CDBS, its messages and what each side learns. Figure 1 (the CDBS's Main) is
:mod:`protocols.cdtl.cdbs` with its store :mod:`protocols.cdtl.store`, Figure 2
(``FindBDTLeaf``) :mod:`protocols.cdtl.find_leaf`, Figure 3 (the client's ``Inference``)
:mod:`protocols.cdtl.client`, with the baselines client naive learning (cnl) and CDBS learning
(cdbsl) of Section 3.

Roles:

* **client** — the data owner: holds the table ``D`` and the key ``k`` (a
  :class:`~mpc.crypto.sealed.ClientKey`); outsources ``IT`` and ``ST``
  (:mod:`protocols.cdtl.anatomization`) and asks for predictions. It keeps nothing but the key
  between requests; to come back in a later process it needs the key, the table's name, the digest
  of its schema (checked against the CDBS's: :meth:`~protocols.cdtl.client.CDBSClient.table_schema`)
  and the shared prune rows, which a client keeps in its private model file (the ``cdtl-outsource``
  / ``cdtl-classify`` systems).
* **cdbs** — the cloud database server: stores ``IT``, ``ST``, the base decision tree (BDT)
  and the encrypted subtrees (:class:`~protocols.cdtl.store.CDBSStore`, SQLite), learns the BDT from
  ``IT`` and serves requests (:func:`~protocols.cdtl.cdbs.serve_client`).

Protocol (every request but ``update_bdt`` one round trip, :class:`CDBSClient`):

* ``outsource`` — the client anatomizes its table and uploads ``IT`` and ``ST`` with the
  positions of ``IT``'s prune rows (the shared reduced-error prune set) and how the learner
  splits nominal attributes (:data:`SPLITS`); the CDBS learns the BDT on ``IT``'s identifying
  attributes with the class (Figure 1, ``LearnDT(IT)``) and stores all three in one
  transaction.
* ``find_bdt_leaf`` (Figure 2) — the client sends the instance without the sensitive value and
  the class (its values in IT's attribute order, with a digest of that order, which the CDBS
  checks: :func:`~protocols.cdtl.find_leaf.schema_digest`); the CDBS routes it to a BDT leaf and
  answers with the leaf's encrypted subtree if the leaf is refined, else with ``leafIns``: the
  leaf's ``IT`` tuples group-joined with ``ST`` on GID (all candidate sensitive values of each
  tuple). IT, ST and the BDT never change after outsourcing, so the CDBS computes every leaf's
  ``leafIns`` once, when it loads the table (:meth:`~protocols.cdtl.store.LoadedTable.prepare`), and
  serves it ready. ``leafIns`` carries only the leaf's rows, as codes into the domains of the
  table's :class:`~protocols.cdtl.anatomization.TableSchema` (its columns without rows), which the
  client has from outsourcing; a client that has not (another client of the same owner) asks for it
  once (``table_schema``). Two kinds of leaf need no refinement, and the CDBS answers them
  with a class label instead of ``leafIns``: a leaf without tuples (a value no training tuple
  had), with the BDT's label there; and (with the ``single_leaf`` shortcut) a leaf whose
  subtree is sure to be a single leaf whatever the sensitive values are, because the tuples
  the learner grows on (those not in the shared prune set) all have one class or are too
  few to split, with that leaf's class.
  The CDBS knows this from IT's classes and the prune positions
  (:meth:`~mpc.learners.c45.C45Classifier.single_leaf_label`). The client then neither receives
  tuples nor learns, and its prediction is the one Figure 3's subtree would give.
* ``update_bdt`` — the client uploads the subtree it learned for a leaf, AES-GCM sealed under
  its key with the table and the leaf id as associated data; the CDBS stores the first subtree
  of a leaf and keeps it (a second upload of the same leaf is ignored), so concurrent clients
  leave exactly one. In the optimised protocol the client does not wait for it: the upload
  travels with its next request (or alone after :data:`POST_DELAY_S` without one), the CDBS
  serves it at once to that request and to any other
  (:meth:`~protocols.cdtl.store.CDBSStore.stage`), stores it once the reply is sent, and
  acknowledges it in its next reply.
* cnl: ``get_tables`` (download ``IT`` and ``ST``), ``put_blob`` / ``get_blob`` (the sealed
  full tree kept at the CDBS); cdbsl: ``predict`` (the CDBS classifies with the BDT).

Two of the steps above are shortcuts that Figures 2-3 do not draw, each a switch of
:class:`Protocol` (:data:`PROTOCOLS` names the four combinations):

* ``single_leaf`` — the CDBS answers a leaf whose subtree is sure to be a single leaf with
  its class. Off, it answers such a leaf as Figure 2 does, with ``leafIns``, and the client
  learns the one-leaf subtree, seals and uploads it (and later queries there get it back).
* ``pipelined`` — ``updateBDT`` is posted and travels with the next request. Off, it is a
  request of its own that the client waits for, as Figure 3 calls it before predicting: one
  more round trip per refined leaf, answered once the CDBS has stored the subtree.

``as-drawn`` (both off) is the protocol of the figures, ``optimised`` (both on) the default.
Both give the same predictions: the one-leaf subtree predicts the class the CDBS would have
answered, and a posted upload is served to the next query as a stored one is. One case the
figures leave open is answered alike by all four: a leaf no training tuple reaches has no
tuples to learn from, so the CDBS answers it with the BDT's label there.

Inference (Figure 3): on a subtree the client decrypts it and predicts; on ``leafIns`` it
decrypts the ESEQs, keeps the true tuples (``trueInstances``), learns the subtree on them with
the sensitive attribute (the same C4.5-style learner, its prune rows those of the shared prune
set that fall in the leaf), seals and uploads it (``updateBDT``) and predicts.

Routing (``findLeaf``): an instance follows its values down the BDT; where its value is missing
or was never seen in training, it stops at that interior node, which then serves as its leaf
(with all the tuples below it). The tuples of a leaf are found the same way, so an instance and
the tuples it is compared with always agree.

What each party learns (ledger):

* the CDBS: the anatomized tables (``cdtl/anatomized``: names, sizes, the learner's kind of
  nominal split; groups' sensitive multisets are in ``ST``), the BDT it learned
  (``cdtl/bdt``), every query instance without its sensitive value and class
  (``cdtl/query``), which leaf each query reached and whether it was refined
  (``cdtl/visited-leaf``), and the sizes of the ciphertexts it stores (``cdtl/ciphertext``);
  cnl: that the client downloaded everything; cdbsl: the queries and its own predictions;
* the client: the leaves' candidate tuples it receives (``cdtl/leaf-instances``, which it could
  compute itself from its own table), nothing it did not own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mpc.crypto.sealed import associated_data
from mpc.errors import ConfigError
from mpc.learners.c45 import C45Classifier
from mpc.runtime.expect import (
    ANY,
    boolean,
    integer,
    list_of,
    mapping,
    one_of,
    record,
    text,
    tuple_of,
)
from mpc.runtime.view import Batch, declared


def _flat_requests(req: Any) -> Any:
    """A request and the posted requests it carries, each on its own and without its number
    or ``sync`` (whether a posted upload travels alone or with the next query, and whether a
    ``sync`` is needed to collect its acknowledgement, is a matter of timing)."""
    if not isinstance(req, dict):
        return req
    posted = req.get("posted")
    items = [p for p in (posted if isinstance(posted, list) else []) if isinstance(p, dict)]
    items.append({k: v for k, v in req.items() if k != "posted"})
    return Batch(
        {k: v for k, v in p.items() if k not in ("n", "later")}
        for p in items
        if p.get("op") != "sync"
    )


#: what the CDBS receives: the client's requests (the anatomized tables, queries without the
#: sensitive value and the class, sealed subtrees)
REQUEST = declared(
    "cdtl/request",
    "the client's requests: the anatomized tables to store, query instances without their "
    "sensitive value and class, subtrees and trees sealed under the client's key",
    canonical=_flat_requests,
    uniform_keys=("eseq", "subtree", "blob"),
    # each request is numbered (n) and names its operation; the updates posted before it
    # (answered in a later reply's acks) come with it, each marked later
    expect=record(
        {
            "op": text(),
            "n": integer(lo=0),
            "later": boolean(),
            "posted": list_of(
                record({"op": text(), "n": integer(lo=0), "later": one_of(True)}, extra=True)
            ),
        },
        optional=("later", "posted"),
        extra=True,
    ),
)
#: what the client receives: its own tables' rows, sealed subtrees, labels, acknowledgements
REPLY = declared(
    "cdtl/reply",
    "the CDBS's answers: a leaf's tuples group-joined with ST (leafIns), a subtree the client "
    "sealed, a class label, the client's tables or its sealed tree, acknowledgements",
    uniform_keys=("eseq", "subtree", "blob"),
    expect=record({"acks": list_of(tuple_of(integer(lo=0), mapping(text(), ANY)))}, extra=True),
)

__all__ = [
    "CDBS",
    "CLIENT",
    "PROTOCOLS",
    "REPLY",
    "REQUEST",
    "SPLITS",
    "Protocol",
    "learner",
    "subtree_aad",
]

CLIENT, CDBS = "client", "cdbs"
#: how long a posted request (``updateBDT``) waits for the client's next request to carry it
#: before it is sent alone
POST_DELAY_S = 0.05


#: how the learner splits a nominal attribute: one branch per value (J48's default), or
#: "== v" against the other values (J48 ``-B``, the paper's trees on vote and australian)
SPLITS = ("multiway", "binary")


@dataclass(frozen=True)
class Protocol:
    """Which of the two shortcuts over Figures 2-3 a run takes (see the module docstring):
    ``single_leaf`` (the CDBS's, per :func:`~protocols.cdtl.cdbs.serve_client`) and ``pipelined``
    (the client's, per :class:`~protocols.cdtl.client.CDBSClient`)."""

    single_leaf: bool = True
    pipelined: bool = True

    @classmethod
    def named(cls, name: str) -> Protocol:
        """The protocol called ``name``, one of :data:`PROTOCOLS`."""
        try:
            return PROTOCOLS[name]
        except KeyError:
            raise ConfigError(
                f"the cdtl protocol must be one of {list(PROTOCOLS)}, got {name!r}"
            ) from None


#: the protocols a run can take, by name: Figures 2-3 as drawn, each shortcut alone, both
PROTOCOLS: dict[str, Protocol] = {
    "as-drawn": Protocol(single_leaf=False, pipelined=False),
    "single-leaf": Protocol(single_leaf=True, pipelined=False),
    "pipelined": Protocol(single_leaf=False, pipelined=True),
    "optimised": Protocol(single_leaf=True, pipelined=True),
}


def learner(seed: int = 0, nominal_splits: str = "multiway") -> C45Classifier:
    """The learner of every tree here (BDT, subtrees, cnl): C4.5-style with reduced-error
    pruning, as the paper's Weka J48 runs; the client chooses ``nominal_splits`` (one of
    :data:`SPLITS`) when it outsources, and the CDBS learns the BDT with it."""
    return C45Classifier(pruning="reduced-error", nominal_splits=nominal_splits, seed=seed)


def subtree_aad(table: str, leaf: str) -> bytes:
    """Associated data binding a sealed subtree to its table and BDT leaf: a subtree moved to
    another leaf fails authentication."""
    return associated_data("cdtl/subtree", table, leaf)


def cnl_aad(table: str) -> bytes:
    return associated_data("cnl/tree", table)


# ----------------------------------------------------------------------------- findLeaf


# ----------------------------------------------------------------------------- the store


# ----------------------------------------------------------------------------- the CDBS


# ----------------------------------------------------------------------------- the client
