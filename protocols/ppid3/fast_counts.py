"""A fast count oracle for PPID3: additive secret sharing mod ``2^64`` with correlated
randomness from a commodity server (``dealer``), behind :class:`CountOracle`'s interface, so
that :func:`protocols.ppid3.ppid3.ppid3` runs unchanged on it.

For the current node, the sites hold additive shares of the ``N x p`` matrix

    ``Z[t, c] = [row t reaches the node] * [class of row t is c]``

(``t`` over the common transaction ids). The class site starts with ``onehot(y)`` restricted
to its own constraint set; every other site with a constraint on the path multiplies its
private membership vector in, one elementwise product per current holder of a share
(Du & Zhan's commodity-server product, elementwise): ``k - 1`` sequential steps at most, each
one exchange. Then

* **distribution counts** (Algorithm 3): every holder sends the column sums of its share to
  the class site, which adds them;
* **attribute counts** (Algorithm 6, lines 1-7, all attributes of a node at once): the owner
  ``s`` of the remaining attributes stacks their one-hot columns into ``X_s`` (``N x sum
  |A|``) and obtains ``X_s^T Z``: its own share locally, and with every other holder ``h`` a
  dealer product in which ``X_s^T + Ra`` travels to ``h`` once per remaining-attribute set
  (a *context*; ``Ra`` is expanded from a seed that only ``s`` and the dealer know) and each
  node then costs ``h``'s masked ``N x p`` share and two ``|A| x p`` matrices.

Masks are AES-256-CTR keystreams keyed from the OS generator; the dealer hands out seeds
where the receiver may know the mask. A node resumes the products from the longest prefix
of steps whose sites' constraint sets are unchanged since the previous node. Each node costs
a constant number of rounds (one to announce which sites have constraints, at most
``k - 1`` for the products, two for the counts), all vectorised with numpy.

**Class order.** The owner ``s`` of an attribute must not see the classes in the same order
at every node (Section 1 of the paper: only the class site knows which class is which; here
the dealing party knows the permutations too, and sees no count). The
class site draws a fresh permutation ``π`` of the classes for every node (OS generator,
:func:`protocols.primitives.psi_ca.os_permutation`) and ``s`` gets ``X_s^T Z`` with its class
columns permuted by ``π``, by a *permuted opening* (:func:`open_permuted_owner`,
:func:`open_permuted_class_site`): in the dot product with ``s``, the class site subtracts a
fresh uniform ``T`` from its share, so ``s`` ends with ``a = X_s^T Z - T``; the dealer gives
``s`` uniform ``K, L`` (as a seed) and the class site ``Kπ - L``; ``s`` sends ``a - K``, the
class site answers ``(a - K + T)π + Kπ - L``, and ``s`` adds ``L``: ``(X_s^T Z)π``. The class
site sees ``a - K`` (uniform), ``s`` nothing but the permuted counts; the dealer knows ``π``
(it receives it with the request) but sees no count. Gains do not depend on the order
(:func:`protocols.ppid3.distribution_counts.gain_in_any_class_order`).

What each party learns (ledger):

* the class site: the class distribution of every node (``fast-counts/distribution``), as
  with the paper's protocol;
* the owner of an attribute: its ``|A| x p`` count matrix at every node where it is a
  candidate (``fast-counts/attribute-counts``), its class columns in a fresh order per node
  that only the class site (and the dealer, which sees no count) knows;
* every site: which sites have a constraint on the current path and when a site's
  constraint set changes (``fast-counts/active``; version numbers and context ids), which
  the public tree structure already tells it, and the number of values of the other sites'
  remaining attributes (the shapes of the products; the set-intersection backend reveals as
  much, one set per value);
* the dealer: every request, as received (``fast-counts/request``): which two sites multiply
  (the requester and its peer), the kind of product, its shape (the number of rows and
  classes and, for a dot product, the number of values of the owner's remaining attributes)
  and context numbers; and that a seed of a site's mask or the class site's permutations came
  with it (``withheld``: randomness drawn for this product, independent of the data, named in
  the ledger but not copied into it, since whoever reads a copy could unmask the product).
  Each site's closing message (``fast-counts/done``) is recorded too. It receives no data.

The permuted opening (:func:`deal_permuted_open`, :func:`open_permuted_owner`,
:func:`open_permuted_class_site`) and the dealer's service loop (:func:`serve_dealer_requests`)
also serve the level driver (:mod:`protocols.ppid3.levels`), whose randomness may come from a
third site instead of the dealer (``--helper sites``, :mod:`protocols.ppid3.level_dealing`): there
``dealer`` names whichever party deals the product. This depth-first oracle always uses the
dealer.

Compared with the set-intersection backend, no site learns the sizes of the other sites'
constraint sets or any sub-intersection size. The extra trust assumption: **the dealer
colludes with no site** (a dealer that shares its randomness with one site lets that site
unmask the other's vectors). Every message a site receives from another site is a vector
masked with fresh uniform randomness, or a share that is itself uniform.
"""

from __future__ import annotations

import asyncio
import math
import secrets
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, cast

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from mpc.crypto.prg import os_random_words
from mpc.errors import ConfigError, ProtocolError
from mpc.runtime.chunks import pack_array, unpack_array
from mpc.runtime.party import Party
from mpc.runtime.view import public, uniform
from protocols.ppid3.distribution_counts import (
    Constraints,
    CountOracle,
    classes_unordered,
    form_trans_set,
)
from protocols.primitives.psi_ca import os_permutation

__all__ = [
    "DEALER",
    "FastCountOracle",
    "Sites",
    "deal_permuted_open",
    "elementwise_product",
    "open_permuted_class_site",
    "open_permuted_owner",
    "permute_blocks",
    "prg_array",
    "prg_words",
    "request_record",
    "serve_count_dealer",
    "serve_dealer_requests",
]

DEALER = "dealer"

#: the fields of a request to a dealing party that describe the product (public); the rest
#: is the requester's randomness for it (a mask seed, the class permutations)
REQUEST_PUBLIC = ("shape", "parents", "blocks", "p", "context", "new")

#: what a party receives, here and in the level driver's products
DEALT = uniform(
    "fast-counts/dealt", "correlated randomness from the dealing party: mask seeds and masks"
)
MASKED = uniform("fast-counts/masked", "the other site's vector or matrix plus a dealt mask")
SHARE = uniform("fast-counts/share", "the other site's share of a product")
HEAD = public(
    "fast-counts/head",
    "which remaining-attribute set (context) a dot product uses; whether its masked matrix "
    "comes now",
)
X_PLUS_RA = uniform("fast-counts/x-plus-ra", "the owner's one-hot columns X^T plus a mask Ra")
A_MINUS_K = uniform(
    "fast-counts/a-minus-k", "an owner's masked counts minus a dealt K (class site)"
)
PERMUTED_OPEN = uniform(
    "fast-counts/permuted-open",
    "the owner's counts with the classes in the class site's order for the node, minus the dealt L",
    opens="fast-counts/attribute-counts",
)
CLASSES = public("fast-counts/classes", "the number of classes")
ACTIVE = public(
    "fast-counts/active",
    "whether a site has constraints on the path and a version of them (the structure tells it)",
)
COLUMN_SUMS = uniform(
    "fast-counts/column-sums",
    "a holder's column sums of its share (class site)",
    opens="fast-counts/distribution",
)
REQUEST = uniform(
    "fast-counts/request",
    "a product to deal: its kind, sites, tag and shape (public), with the requester's "
    "randomness for it (a mask seed, the class permutations); or 'done'",
    public=REQUEST_PUBLIC,
    permutations=True,
    ordered=False,
)
RandomWords = Callable[[int], np.ndarray]


class Sites:
    """A party seen as a member of the sites only: ``parties``, ``peers`` and
    :meth:`broadcast` leave out the deployment's dealer, everything else is the party's own.
    PPID3 and its sub-protocols take all of ``party.parties`` as the sites."""

    def __init__(self, party: Party, sites: Sequence[str]) -> None:
        if party.name not in sites:
            raise ConfigError(f"{party.name} is not one of the sites {list(sites)}")
        self._party = party
        self.parties = list(sites)
        self.peers = [p for p in self.parties if p != party.name]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._party, name)

    async def broadcast(self, tag: str, obj: Any, peers: Sequence[str] | None = None) -> None:
        for p in self.peers if peers is None else [p for p in peers if p != self._party.name]:
            await self._party.send(p, tag, obj)

    def as_party(self) -> Party:
        """This view where a :class:`Party` is expected."""
        return cast(Party, self)


# ----------------------------------------------------------------------------- products


def prg_words(seed: bytes, k: int) -> np.ndarray:
    """``k`` pseudo-random ``uint64`` words expanded from a 32-byte ``seed`` (AES-256-CTR
    keystream, nonce 0): how the dealer hands out masks as seeds instead of arrays."""
    if not isinstance(seed, bytes) or len(seed) != 32:
        raise ProtocolError("a mask seed must be 32 bytes")
    cipher = Cipher(algorithms.AES(seed), modes.CTR(bytes(16)))
    out = bytearray(8 * k + 15)
    n = cipher.encryptor().update_into(bytes(8 * k), out)
    return np.frombuffer(out, dtype="<u8", count=n // 8).astype(np.uint64, copy=False)


def prg_array(seed: bytes, shape: Sequence[int], dtype: Any) -> np.ndarray:
    """A uniform array of ``shape`` in the ring of ``dtype`` (an unsigned integer type)
    expanded from a 32-byte ``seed``: the low bits of :func:`prg_words`."""
    dims = tuple(int(d) for d in shape)
    return prg_words(seed, math.prod(dims)).astype(dtype).reshape(dims)


async def elementwise_product(
    party: Party,
    x: np.ndarray,
    *,
    a: str,
    b: str,
    dealer: str,
    tag: str,
) -> np.ndarray:
    """Additive shares of ``x_a * x_b`` (elementwise, mod ``2^64``) between ``a`` and ``b``,
    each holding its ``x`` (same shape). The dealer has dealt ``(Ra, ra)`` to ``a`` (as a
    seed) and ``(Rb, rb)`` to ``b`` (``Rb`` as a seed) with ``ra + rb = Ra * Rb``; ``a`` sends
    ``x_a + Ra``, ``b`` sends ``x_b + Rb`` (one exchange); ``a`` keeps
    ``ra - Ra * (x_b + Rb)``, ``b`` keeps ``(x_a + Ra) * x_b + rb``."""
    me_a = party.name == a
    other = b if me_a else a
    got = await party.recv(dealer, f"{tag}/dealer", DEALT)
    if not isinstance(got, dict) or not isinstance(got.get("seed"), bytes):
        raise ProtocolError(f"{dealer} sent no correlated randomness for {tag}")
    size = int(x.size)
    if me_a:
        words = prg_words(got["seed"], 2 * size)
        R, r = words[:size].reshape(x.shape), words[size:].reshape(x.shape)
    else:
        R = prg_words(got["seed"], size).reshape(x.shape)
        r = unpack_array(got.get("r"), np.uint64, x.shape, dealer, "r")
    await party.send(other, f"{tag}/masked", pack_array(x + R))
    theirs = unpack_array(
        await party.recv(other, f"{tag}/masked", MASKED), np.uint64, x.shape, other, "x+R"
    )
    party.metrics.count("elementwise_products", size)
    if me_a:
        return r - R * theirs
    return theirs * x + r


async def _deal_elementwise(party: Party, shape: tuple[int, ...], a: str, b: str, tag: str) -> None:
    size = int(np.prod(shape))
    seed_a, seed_b = secrets.token_bytes(32), secrets.token_bytes(32)
    words = prg_words(seed_a, 2 * size)
    Ra, ra = words[:size], words[size:]
    rb = Ra * prg_words(seed_b, size) - ra
    await party.send(a, f"{tag}/dealer", {"seed": seed_a})
    await party.send(b, f"{tag}/dealer", {"seed": seed_b, "r": pack_array(rb.reshape(shape))})


# ----------------------------------------------------------------------------- class order


def permute_blocks(x: np.ndarray, perms: np.ndarray) -> np.ndarray:
    """``x`` (``m x B*p``: ``B`` blocks of ``p`` class columns) with the columns of block
    ``b`` in the order ``perms[b]``: ``out[:, b*p + i] = x[:, b*p + perms[b, i]]``."""
    B, p = perms.shape
    return x[:, (np.arange(B)[:, None] * p + perms).reshape(-1)]


def _check_perms(value: object, B: int, p: int, sender: str) -> np.ndarray:
    if not (
        isinstance(value, list)
        and len(value) == B
        and all(isinstance(r, list) and sorted(r) == list(range(p)) for r in value)
    ):
        raise ProtocolError(f"{sender} sent {value!r}, not {B} permutations of {p}")
    return np.asarray(value, dtype=np.int64).reshape(B, p)


async def deal_permuted_open(
    party: Party, site: str, peer: str, tag: str, shape: Sequence[int], req: dict[str, Any],
    dtype: Any,
) -> None:  # fmt: skip
    """The dealing party's part of a permuted opening asked for by the class site ``site``
    with the owner ``peer`` (the dealer, or the third site of the two; never the class site
    itself): ``shape = (m, B, p)`` and ``req["perms"]`` (``B`` permutations of ``p``).
    ``peer`` gets uniform ``K, L`` as a seed, ``site`` gets ``Kπ - L``. The dealing party
    learns the permutations (random, independent of the data) and never a message of the
    opening."""
    m, B, p = (int(d) for d in shape)
    perms = _check_perms(req.get("perms"), B, p, site)
    seed = secrets.token_bytes(32)
    K, L = prg_array(seed, (2, m, B * p), dtype)
    await party.send(peer, f"{tag}/dealer", {"seed": seed})
    await party.send(site, f"{tag}/dealer", {"d": pack_array(permute_blocks(K, perms) - L)})


async def open_permuted_owner(
    party: Party, a: np.ndarray, *, class_site: str, dealer: str, tag: str
) -> np.ndarray:
    """The owner's side of a permuted opening: ``a`` (``m x B*p``) is its counts minus the
    class site's mask ``T``; returns ``(a + T)`` with each block's class columns in the class
    site's order for that block. Sends ``a - K`` (``K`` from the dealing party ``dealer``,
    uniform)."""
    got = await party.recv(dealer, f"{tag}/dealer", DEALT)
    if not isinstance(got, dict) or not isinstance(got.get("seed"), bytes):
        raise ProtocolError(f"{dealer} sent no randomness for the permuted opening {tag}")
    K, L = prg_array(got["seed"], (2, *a.shape), a.dtype)
    await party.send(class_site, f"{tag}/a-K", pack_array(a - K))
    y = unpack_array(await party.recv(class_site, f"{tag}/open", PERMUTED_OPEN), a.dtype, a.shape,
                class_site,
                "permuted counts")  # fmt: skip
    return y + L


async def open_permuted_class_site(
    party: Party,
    T: np.ndarray,
    perms: np.ndarray,
    *,
    owner: str,
    ask: Callable[[dict[str, Any]], Awaitable[None]],
    dealer: str,
    tag: str,
) -> None:
    """The class site's side of a permuted opening with ``owner``: ``T`` (``m x B*p``) is
    the mask it subtracted from its share of the owner's counts, ``perms`` (``B x p``) the
    class order of each block. Asks the dealing party ``dealer`` (through ``ask``) for
    ``Kπ - L``, receives ``a - K`` (uniform) and answers ``(a - K + T)π + Kπ - L``."""
    B, p = perms.shape
    m, cols = T.shape
    if cols != B * p:
        raise ConfigError(f"a permuted opening of {cols} columns needs {cols // p} blocks")
    await ask({"kind": "perm", "peer": owner, "tag": tag, "shape": [m, B, p],
               "perms": perms.tolist()})  # fmt: skip
    got = await party.recv(dealer, f"{tag}/dealer", DEALT)
    d = unpack_array(got.get("d") if isinstance(got, dict) else None, T.dtype, (m, cols), dealer,
                "K pi - L")  # fmt: skip
    x = unpack_array(await party.recv(owner, f"{tag}/a-K", A_MINUS_K), T.dtype, (m, cols), owner,
                "a - K")  # fmt: skip
    await party.send(owner, f"{tag}/open", pack_array(permute_blocks(x + T, perms) + d))


class _LRU:
    """A small least-recently-used map; every party of a (owner, holder) pair applies the
    same operations in the same order, so their maps stay alike."""

    def __init__(self, size: int) -> None:
        self.size, self.items = size, {}  # type: ignore[var-annotated]

    def get(self, key: Any) -> Any:
        value = self.items.pop(key)
        self.items[key] = value
        return value

    def put(self, key: Any, value: Any) -> None:
        self.items.pop(key, None)
        self.items[key] = value
        while len(self.items) > self.size:
            self.items.pop(next(iter(self.items)))


#: contexts (remaining-attribute sets) an (owner, holder) pair keeps: enough for a path
CONTEXTS = 12


async def _xdot_owner(
    party: Party,
    xt: np.ndarray,
    seed: bytes,
    ctx: int,
    new: bool,
    holder: str,
    dealer: str,
    tag: str,
) -> np.ndarray:
    """The owner's side of ``X^T z`` with ``z`` held by ``holder``; ``X^T + Ra`` travels once
    per context (``Ra`` from ``seed``, which the dealer has too), then each product costs the
    holder's masked ``n x p`` vector and two ``m x p`` matrices."""
    m, n = xt.shape
    Ra = prg_words(seed, m * n).reshape(m, n)
    await party.send(holder, f"{tag}/head", {"context": ctx, "new": new})
    if new:
        await party.send(holder, f"{tag}/Ahat", pack_array(xt + Ra))
    got = await party.recv(dealer, f"{tag}/dealer", DEALT)
    ra = unpack_array(got.get("ra") if isinstance(got, dict) else None, np.uint64, (m, None),
                 dealer, "ra")  # fmt: skip
    p = ra.shape[1]
    b_hat = unpack_array(
        await party.recv(holder, f"{tag}/masked", MASKED), np.uint64, (n, p), holder, "z+Rb"
    )
    v = unpack_array(
        await party.recv(holder, f"{tag}/share", SHARE), np.uint64, (m, p), holder, "share"
    )
    party.metrics.count("dot_products", m * p)
    return ra - Ra @ b_hat + v


async def _xdot_holder(
    party: Party,
    z: np.ndarray,
    owner: str,
    cache: _LRU,
    dealer: str,
    tag: str,
    *,
    mask_out: bool = False,
) -> np.ndarray | None:
    """The holder's side of ``X^T z``. With ``mask_out`` (the class site, before a permuted
    opening) it subtracts a fresh uniform ``T`` from the share it sends and returns ``T``."""
    head = await party.recv(owner, f"{tag}/head", HEAD)
    if not isinstance(head, dict) or not isinstance(head.get("context"), int):
        raise ProtocolError(f"{owner} sent no context for {tag}")
    if head.get("new"):
        a_hat = unpack_array(await party.recv(owner, f"{tag}/Ahat", X_PLUS_RA), np.uint64,
                             (None, z.shape[0]), owner, "X+Ra")  # fmt: skip
        cache.put(head["context"], a_hat)
    else:
        try:
            a_hat = cache.get(head["context"])
        except KeyError:
            raise ProtocolError(f"{owner} reused context {head['context']} it never sent") from None
    got = await party.recv(dealer, f"{tag}/dealer", DEALT)
    if not isinstance(got, dict) or not isinstance(got.get("seed"), bytes):
        raise ProtocolError(f"{dealer} sent no correlated randomness for {tag}")
    n, p = z.shape
    Rb = prg_words(got["seed"], n * p).reshape(n, p)
    rb = unpack_array(got.get("rb"), np.uint64, (a_hat.shape[0], p), dealer, "rb")
    await party.send(owner, f"{tag}/masked", pack_array(z + Rb))
    T = os_random_words(a_hat.shape[0] * p).reshape(a_hat.shape[0], p) if mask_out else None
    share = a_hat @ z + rb
    await party.send(owner, f"{tag}/share", pack_array(share - T if T is not None else share))
    return T


DealerHandler = Callable[[str, str, str, str, list[int], dict[str, Any]], Awaitable[None]]


#: request fields that carry a site's randomness (a mask seed, the class permutations): the
#: dealer's ledger names them but does not copy their values
WITHHELD_FIELDS = ("seed", "perms")


def request_record(site: str, req: dict[str, Any]) -> dict[str, Any]:
    """What the dealer puts on record for a request from ``site``: every field as received,
    its ``tag`` aside (the ledger entry's step), and the names of the randomness fields
    (:data:`WITHHELD_FIELDS`) under ``withheld``."""
    entry: dict[str, Any] = {"site": site}
    withheld = []
    for key in sorted(req):
        if key == "tag":
            continue
        if key in WITHHELD_FIELDS:
            withheld.append(key)
        else:
            entry[key] = req[key]
    if withheld:
        entry["withheld"] = withheld
    return entry


async def serve_dealer_requests(
    party: Party,
    sites: Sequence[str],
    prefix: str,
    handle: DealerHandler,
    *,
    serve: Sequence[str] | None = None,
    label: str = "fast-counts/request",
) -> int:
    """A dealing party's service loop: the numbered requests (``<prefix>/<n>``) of every site
    in ``serve`` (default: all ``sites``; served concurrently, each in order) until the site
    says ``done``. Each request is checked — a dict naming the product (``kind``), another
    site (``peer``), a ``tag`` and a public ``shape`` of positive ints —, put on the ledger as
    received (``label``: ``fast-counts/request`` for the dealer, :func:`request_record`) and
    passed to ``handle(site, kind, peer, tag, shape, request)``. A site's ``done`` is recorded
    as ``fast-counts/done``. Returns the number handled."""
    dealt = 0
    me = party.name

    async def one(site: str) -> None:
        nonlocal dealt
        n = 0
        while True:
            req = await party.recv(site, f"{prefix}/{n}", REQUEST)
            n += 1
            if req == "done":
                party.ledger.record("fast-counts/done", {"site": site, "requests": n - 1},
                                    step=f"{prefix}/{n - 1}")  # fmt: skip
                return
            if not isinstance(req, dict):
                raise ProtocolError(f"{site} sent {me} {type(req).__name__}, not a request")
            kind, peer, tag, shape = (req.get(k) for k in ("kind", "peer", "tag", "shape"))
            if not isinstance(peer, str) or peer not in sites or peer == site:
                raise ProtocolError(f"{site} asked {me} for a product with {peer!r}")
            if not isinstance(tag, str) or not isinstance(kind, str):
                raise ProtocolError(f"{site} sent {me} a request without kind or tag")
            if not isinstance(shape, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in shape
            ):
                raise ProtocolError(f"{site} asked {me} for shape {shape!r}")
            party.ledger.record(label, request_record(site, req), step=tag)
            await handle(site, kind, peer, tag, shape, req)
            dealt += 1

    await asyncio.gather(*(one(s) for s in (sites if serve is None else serve)))
    return dealt


async def serve_count_dealer(
    party: Party, sites: Sequence[str], *, words: RandomWords | None = None
) -> int:
    """The dealer's side: serve every site's numbered requests (``fast/req/<n>``) until each
    says ``done``. A request names the product (``mul``, ``xdot`` or ``perm``), the peer,
    the public shape and the tag; the dealer deals correlated randomness to both. Returns the
    number of products dealt."""
    gen = words or os_random_words
    caches: dict[tuple[str, str], _LRU] = {}

    async def handle(
        site: str, kind: str, peer: str, tag: str, shape: list[int], req: dict[str, Any]
    ) -> None:
        if kind == "mul" and len(shape) == 2:
            await _deal_elementwise(party, (shape[0], shape[1]), site, peer, tag)
        elif kind == "xdot" and len(shape) == 3:
            m, n_rows, p = shape
            ctx = req.get("context")
            cache = caches.setdefault((site, peer), _LRU(CONTEXTS))
            if isinstance(req.get("seed"), bytes):
                cache.put(ctx, req["seed"])
            try:
                seed = cache.get(ctx)
            except KeyError:
                raise ProtocolError(f"{site} used context {ctx!r} it never opened") from None
            Ra = prg_words(seed, m * n_rows).reshape(m, n_rows)
            seed_b = secrets.token_bytes(32)
            Rb = prg_words(seed_b, n_rows * p).reshape(n_rows, p)
            ra = gen(m * p).reshape(m, p)
            await party.send(site, f"{tag}/dealer", {"ra": pack_array(ra)})
            await party.send(
                peer, f"{tag}/dealer", {"seed": seed_b, "rb": pack_array(Ra @ Rb - ra)}
            )
        elif kind == "perm" and len(shape) == 3:
            await deal_permuted_open(party, site, peer, tag, shape, req, np.uint64)
        else:
            raise ProtocolError(f"{site} asked the dealer for {kind!r} of shape {shape}")

    return await serve_dealer_requests(party, sites, "fast/req", handle)


# ----------------------------------------------------------------------------- the oracle


class FastCountOracle(CountOracle):
    """PPID3's counts by secret sharing with a dealer. Every site builds one; ``party``
    passed to the methods is the site view (:class:`Sites`) whose ``parties`` are the sites,
    while the dealer is reached through the underlying party."""

    name = "fast"

    def __init__(self, dealer: str = DEALER) -> None:
        self.dealer = dealer
        self._requests = 0
        self._node: tuple[str, np.ndarray | None, list[str]] | None = None
        self.products = 0  # elementwise products (vectors) and dot-product batches run
        self.dot_batches = 0
        self._next_ctx = 0
        self._signature: tuple[tuple[int, int], ...] = ()
        self._version = 0
        self._steps: list[tuple[tuple[tuple[str, int], ...], np.ndarray | None]] = []
        self._owner_ctx: dict[str, _LRU] = {}  # holder -> remaining set -> (context, seed)
        self._holder_ctx: dict[str, _LRU] = {}  # owner -> context -> X^T + Ra

    # -- plumbing

    async def _ask(
        self, party: Party, kind: str, peer: str, shape: Sequence[int], tag: str
    ) -> None:
        await self._request(
            party, {"kind": kind, "peer": peer, "shape": [int(d) for d in shape], "tag": tag}
        )

    async def _request(self, party: Party, body: dict[str, Any]) -> None:
        n, self._requests = self._requests, self._requests + 1  # before the await: tasks
        await party.send(self.dealer, f"fast/req/{n}", body)  # running side by side share it

    async def close(self, party: Party) -> None:
        """Tell the dealer this site is done."""
        n, self._requests = self._requests, self._requests + 1
        await party.send(self.dealer, f"fast/req/{n}", "done")

    # -- the node's shares

    async def _shares(
        self, party: Party, constraints: Constraints, class_site: str, tag: str
    ) -> tuple[np.ndarray | None, list[str]]:
        """This site's share of ``Z`` (or None if it holds none) and the holders.

        Every site announces whether it has constraints and a version number of its
        constraint set (it changes when the set does; both follow from the public structure).
        The products run in a fixed order (the class site, then the active sites in site
        order); the shares after each step of the previous node are kept, and a node starts
        from the longest prefix of steps whose sites' versions are unchanged — in a
        depth-first walk, from the step of the site that split the parent."""
        view = constraints.view
        names = list(party.parties)
        signature = tuple(sorted(constraints._values.items()))
        if signature != self._signature:
            self._signature, self._version = signature, self._version + 1
        mine = [bool(signature), self._version]
        await party.broadcast(f"{tag}/active", mine)
        flags = await party.gather([n for n in names if n != party.name], f"{tag}/active", ACTIVE)
        flags[party.name] = mine
        for n, f in flags.items():
            if not (isinstance(f, list) and len(f) == 2 and isinstance(f[0], bool)
                    and isinstance(f[1], int) and not isinstance(f[1], bool)):  # fmt: skip
                raise ProtocolError(f"{n} announced {f!r} instead of [active, version]")
        party.ledger.record("fast-counts/active", [n for n in names if flags[n][0]], step=tag)
        order = [class_site] + [i for i in names if i != class_site and flags[i][0]]
        keys = [tuple((i, flags[i][1]) for i in order[: t + 1]) for t in range(len(order))]
        start = 0
        while (
            start + 1 < len(order)
            and start + 1 < len(self._steps)
            and self._steps[start + 1][0] == keys[start + 1]
        ):
            start += 1
        mask = form_trans_set(constraints)
        share: np.ndarray | None = None
        if start == 0:
            if view.is_class_site:
                assert view.y is not None and view.classes is not None
                onehot = np.zeros((len(view.tids), len(view.classes)), dtype=np.uint64)
                onehot[np.arange(len(view.tids)), view.y] = 1
                share = onehot * mask[:, None].astype(np.uint64)
            self._steps = [(keys[0], share)]
        else:
            share = self._steps[start][1]
            del self._steps[start + 1 :]
        p = await self._n_classes(party, class_site, tag) if not view.is_class_site else self._p
        shape = (len(view.tids), p)
        for t in range(start + 1, len(order)):
            i, holders = order[t], order[:t]
            step = f"{tag}/m{names.index(i)}"
            if party.name == i:
                x = np.broadcast_to(mask[:, None].astype(np.uint64), shape).copy()
                for j in holders:
                    await self._ask(party, "mul", j, shape, f"{step}/{j}")
                outs = await asyncio.gather(*(
                    elementwise_product(party, x, a=i, b=j, dealer=self.dealer,
                                        tag=f"{step}/{j}")
                    for j in holders
                ))  # fmt: skip
                share = np.asarray(np.sum(np.stack(outs), axis=0, dtype=np.uint64))
                self.products += len(holders)
            elif party.name in holders:
                assert share is not None
                share = await elementwise_product(
                    party, share, a=i, b=party.name, dealer=self.dealer,
                    tag=f"{step}/{party.name}",
                )  # fmt: skip
            self._steps.append((keys[t], share))
        return share, order

    async def _n_classes(self, party: Party, class_site: str, tag: str) -> int:
        """The number of classes, told by the class site once (public in PPID3)."""
        if not hasattr(self, "_p"):
            if party.name == class_site:
                raise ConfigError("the class site knows its classes")
            p = await party.recv(class_site, "fast/classes", CLASSES)
            if not isinstance(p, int) or isinstance(p, bool) or p < 1:
                raise ProtocolError(f"{class_site} announced {p!r} classes")
            self._p = p
        return self._p

    async def distribution_counts(
        self, party: Party, constraints: Constraints, *, class_site: str, tag: str
    ) -> np.ndarray | None:
        view = constraints.view
        if view.is_class_site and not hasattr(self, "_p"):
            assert view.classes is not None
            self._p = len(view.classes)
            await party.broadcast("fast/classes", self._p)
        share, holders = await self._shares(party, constraints, class_site, tag)
        self._node = (tag, share, holders)
        if party.name != class_site:
            if party.name in holders:
                assert share is not None
                await party.send(
                    class_site, f"{tag}/sum", pack_array(share.sum(axis=0, dtype=np.uint64))
                )
            return None
        assert share is not None
        total = share.sum(axis=0, dtype=np.uint64)
        for j in holders:
            if j != party.name:
                total = total + unpack_array(
                    await party.recv(j, f"{tag}/sum", COLUMN_SUMS),
                    np.uint64,
                    (self._p,),
                    j,
                    "column sums",
                )
        counts = total.astype(np.int64)
        party.ledger.record("fast-counts/distribution", counts.tolist(), step=tag)
        return counts

    async def attribute_counts(
        self,
        party: Party,
        constraints: Constraints,
        remaining: Sequence[int],
        *,
        remaining_per_site: Sequence[int],
        class_site: str,
        tag: str,
    ) -> dict[int, np.ndarray]:
        if self._node is None:
            raise ProtocolError("attribute counts asked before the node's distribution counts")
        _, share, holders = self._node
        view = constraints.view
        names = list(party.parties)
        n, p = len(view.tids), self._p
        tasks: list[Coroutine[Any, Any, np.ndarray | None]] = []
        sizes = [len(view.domains[j]) for j in remaining]
        total: np.ndarray | None = None
        if remaining:
            xt = np.zeros((sum(sizes), n), dtype=np.uint64)
            offset = 0
            for j, size in zip(remaining, sizes, strict=True):
                xt[offset + view.codes[:, j], np.arange(n)] = 1
                offset += size
            total = xt @ share if share is not None else np.zeros((sum(sizes), p), np.uint64)
            key = tuple(remaining)
            for h in holders:
                if h == party.name:
                    continue
                cache = self._owner_ctx.setdefault(h, _LRU(CONTEXTS))
                if key in cache.items:
                    ctx, seed = cache.get(key)
                    new = False
                else:
                    ctx, seed, new = self._next_ctx, secrets.token_bytes(32), True
                    self._next_ctx += 1
                    cache.put(key, (ctx, seed))
                t = f"{tag}/x{names.index(party.name)}/{h}"
                request: dict[str, Any] = {
                    "kind": "xdot",
                    "peer": h,
                    "tag": t,
                    "shape": [int(xt.shape[0]), n, p],
                    "context": ctx,
                }
                if new:
                    request["seed"] = seed
                await self._request(party, request)
                tasks.append(_xdot_owner(party, xt, seed, ctx, new, h, self.dealer, t))
        n_mine = len(tasks)
        is_class = party.name == class_site
        # the class site's order of the classes at this node, for every owner's counts
        order = os_permutation(p)[None, :] if is_class else None

        async def as_holder(z: np.ndarray, owner: str, cache: _LRU, t: str) -> None:
            T = await _xdot_holder(party, z, owner, cache, self.dealer, t, mask_out=is_class)
            if T is not None:
                assert order is not None
                await open_permuted_class_site(
                    party, T, order, owner=owner, ask=lambda body: self._request(party, body),
                    dealer=self.dealer, tag=f"{t}/perm",
                )  # fmt: skip

        if party.name in holders and share is not None:
            for s_index, owner in enumerate(names):
                if owner == party.name or remaining_per_site[s_index] == 0:
                    continue
                cache = self._holder_ctx.setdefault(owner, _LRU(CONTEXTS))
                tasks.append(as_holder(share, owner, cache, f"{tag}/x{s_index}/{party.name}"))
        outs = await asyncio.gather(*tasks)
        self.dot_batches += n_mine
        out: dict[int, np.ndarray] = {}
        if remaining:
            assert total is not None
            for o in outs[:n_mine]:
                assert o is not None
                total = total + o
            if not is_class:  # total = X^T Z - T: open it with the classes permuted
                t = f"{tag}/x{names.index(party.name)}/{class_site}/perm"
                total = await open_permuted_owner(
                    party, total, class_site=class_site, dealer=self.dealer, tag=t
                )
            counts = total.astype(np.int64)
            offset = 0
            for j, size in zip(remaining, sizes, strict=True):
                out[j] = counts[offset : offset + size]
                offset += size
            learned = {view.attributes[j]: out[j].tolist() for j in remaining}
            party.ledger.record(
                "fast-counts/attribute-counts", learned, step=tag,
                canonical=None if is_class else classes_unordered(learned),
            )  # fmt: skip
        return out
