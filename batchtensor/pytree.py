"""Minimal pytrees: tuples, lists, dicts and namedtuples are nodes, everything else is a leaf.

``None`` inside a *value* tree is an empty node (it has no leaves), as in JAX; inside an axis
spec (``in_axes`` / ``out_axes``) ``None`` is a leaf meaning "not mapped".
"""

from __future__ import annotations

import copy
from enum import Enum
from typing import Any, Callable

__all__ = ["flatten", "flatten_as", "unflatten", "broadcast_prefix", "tree_map", "is_namedtuple",
           "keystr", "leaf_paths", "TreeDef", "TreeKind", "LEAF", "NONE", "NODE"]


class TreeKind(Enum):
    LEAF = "a leaf"
    NONE = "None: a node without leaves"
    NODE = "a tuple, list, dict or namedtuple"


LEAF, NONE, NODE = TreeKind.LEAF, TreeKind.NONE, TreeKind.NODE


def is_namedtuple(x: Any) -> bool:
    # (type(x), not isinstance: a BatchedTensor answers isinstance through its __class__
    # property, a Python call per leaf)
    t = type(x)
    return issubclass(t, tuple) and hasattr(t, "_fields")


def _children(x: Any):
    """(keys, children, rebuild) for a node, or None for a leaf."""
    t = type(x)
    if t is tuple or t is list:
        return range(len(x)), list(x), (lambda cs, t=t: t(cs))
    if t is dict:
        keys = list(x)
        return keys, [x[k] for k in keys], (lambda cs, keys=keys: dict(zip(keys, cs)))
    if is_namedtuple(x):
        extra = getattr(x, "__dict__", None)
        if extra:
            return _tuple_with_attributes(x, t, extra)
        return x._fields, list(x), (lambda cs, t=t: t(*cs))
    if isinstance(x, dict):  # OrderedDict, defaultdict, Counter: the type and its attributes kept
        keys = list(x)
        return keys, [x[k] for k in keys], (lambda cs, keys=keys, x=x: _refilled(x, keys, cs))
    return None


def _refilled(x: dict, keys: list, children: list) -> dict:
    """A dict subclass rebuilt with new values: a shallow copy (``defaultdict``'s factory and
    any attribute kept; its constructor does not take the items alone), emptied and refilled."""
    out = copy.copy(x)
    out.clear()
    out.update(zip(keys, children))
    return out


def _tuple_with_attributes(x: Any, t: type, extra: dict):
    """A namedtuple-like result that keeps more fields as attributes (SciPy's ``TtestResult``,
    ``KstestResult``: ``t(*fields)`` cannot rebuild them). Its numbers and arrays are children,
    its other attributes (a dtype, a module) stay as they are; it is rebuilt as pickle rebuilds
    it: ``t.__new__`` with the fields (and SciPy's ``_extra_fields`` by keyword), then the
    attributes."""
    data = [k for k, v in extra.items() if _is_data(v)]
    fixed = {k: v for k, v in extra.items() if k not in data}
    n, by_keyword = len(x), tuple(getattr(t, "_extra_fields", ()))

    def rebuild(cs, t=t, n=n, data=data, fixed=fixed, by_keyword=by_keyword):
        attributes = {**fixed, **dict(zip(data, cs[n:]))}
        obj = t.__new__(t, *cs[:n], **{k: attributes[k] for k in by_keyword})
        obj.__dict__.update(attributes)
        return obj

    return list(x._fields) + data, list(x) + [extra[k] for k in data], rebuild


def _is_data(v: Any) -> bool:
    """An array (anything with ``__array_function__``), a NumPy scalar or a Python number."""
    return hasattr(v, "__array_function__") or type(v) in (int, float, complex, bool) or (
        hasattr(v, "dtype") and hasattr(v, "item") and not isinstance(v, type))


class TreeDef:
    """A tree's structure. Two are equal where the trees have the same node types, keys in the
    same order and equal children (the examples' results must be, to be stacked leaf by leaf
    as the loop stacks them)."""

    __slots__ = ("kind", "rebuild", "keys", "children", "num_leaves", "node_type")

    def __init__(self, kind, rebuild=None, keys=(), children=(), node_type=None):
        self.kind = kind  # LEAF, NONE or NODE
        self.rebuild = rebuild
        self.keys = keys
        self.children = children
        self.node_type = node_type
        self.num_leaves = (
            1 if kind is LEAF else 0 if kind is NONE else sum(c.num_leaves for c in children)
        )

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, TreeDef):
            return NotImplemented
        return (self.kind is other.kind and self.node_type is other.node_type
                and self.num_leaves == other.num_leaves and list(self.keys) == list(other.keys)
                and len(self.children) == len(other.children)
                and all(a == b for a, b in zip(self.children, other.children)))

    def __hash__(self) -> int:
        return hash((self.kind, self.node_type, self.num_leaves, len(self.children)))


_LEAF = TreeDef(LEAF)
_NONE = TreeDef(NONE)


def flatten(tree: Any) -> tuple[list, TreeDef]:
    """Flatten a value tree into its leaves (``None`` counts as an empty node)."""
    leaves: list = []

    def rec(x):
        if x is None:
            return _NONE
        ch = _children(x)
        if ch is None:
            leaves.append(x)
            return _LEAF
        keys, children, rebuild = ch
        return TreeDef(NODE, rebuild, list(keys), [rec(c) for c in children], type(x))

    return leaves, rec(tree)


def flatten_as(tree: Any, treedef: TreeDef) -> list | None:
    """``tree``'s leaves in the order of ``treedef`` (a dict's values by ``treedef``'s keys,
    whatever the order of ``tree``'s keys), or None where ``tree`` has another structure."""
    leaves: list = []

    def rec(x, td) -> bool:
        if x is None:
            return td.kind is NONE
        ch = _children(x)
        if ch is None:
            leaves.append(x)
            return td.kind is LEAF
        if td.kind is not NODE or type(x) is not td.node_type:
            return False
        keys, children, _ = ch
        if isinstance(x, dict):
            if len(x) != len(td.keys) or any(k not in x for k in td.keys):
                return False
            return all(rec(x[k], c) for k, c in zip(td.keys, td.children))
        if list(keys) != list(td.keys):
            return False
        return all(rec(c, ctd) for c, ctd in zip(children, td.children))

    return leaves if rec(tree, treedef) else None


def unflatten(treedef: TreeDef, leaves: list) -> Any:
    it = iter(leaves)

    def rec(td):
        if td.kind is LEAF:
            return next(it)
        if td.kind is NONE:
            return None
        return td.rebuild([rec(c) for c in td.children])

    return rec(treedef)


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    leaves, td = flatten(tree)
    return unflatten(td, [fn(x) for x in leaves])


def keystr(path: tuple) -> str:
    return "".join(f"[{k!r}]" for k in path)


def broadcast_prefix(prefix: Any, tree: Any, what: str, root: str) -> list:
    """Expand the axis spec ``prefix`` to one entry per leaf of ``tree``.

    ``prefix`` must be a tree prefix of ``tree`` whose leaves are ints or None. Mismatches raise
    a ValueError naming the path, e.g. ``in_axes[1]['w']``.
    """
    out: list = []

    def leaf_ok(p, path):
        if p is None or (isinstance(p, int) and not isinstance(p, bool)):
            return True
        raise ValueError(
            f"vmap: {what}{keystr(path)} must be an int, None, or a (nested) tuple/list/dict of "
            f"those, but got {p!r} of type {type(p).__name__}"
        )

    def rec(p, x, path):
        if p is None or (isinstance(p, int) and not isinstance(p, bool)):
            n = flatten(x)[1].num_leaves
            out.extend([p] * n)
            return
        pch = _children(p)
        if pch is None:
            leaf_ok(p, path)
        if x is None:
            return
        xch = _children(x)
        pkeys, pchildren, _ = pch
        if xch is None:
            raise ValueError(
                f"vmap: {what}{keystr(path)} is a {type(p).__name__} but {root}{keystr(path)} "
                f"is a leaf of type {type(x).__name__}; {what} must be a tree prefix of the "
                f"{root.split('[')[0] or 'arguments'}"
            )
        xkeys, xchildren, _ = xch
        if type(p) is dict or isinstance(p, dict):
            if not isinstance(x, dict) or set(p) != set(x):
                raise ValueError(
                    f"vmap: {what}{keystr(path)} has keys {sorted(map(str, p))} but "
                    f"{root}{keystr(path)} has "
                    + (f"keys {sorted(map(str, x))}" if isinstance(x, dict)
                       else f"type {type(x).__name__}")
                )
            for k, c in zip(xkeys, xchildren):
                rec(p[k], c, path + (k,))
            return
        if isinstance(x, dict) or len(pchildren) != len(xchildren):
            raise ValueError(
                f"vmap: {what}{keystr(path)} is a {type(p).__name__} of length {len(pchildren)} "
                f"but {root}{keystr(path)} is a {type(x).__name__}"
                + ("" if isinstance(x, dict) else f" of length {len(xchildren)}")
                + f"; {what} must be a tree prefix of it"
            )
        for k, pc, xc in zip(xkeys, pchildren, xchildren):
            rec(pc, xc, path + (k,))

    rec(prefix, tree, ())
    return out


def leaf_paths(tree: Any) -> list[tuple]:
    """The key path of every leaf of ``tree``, in flatten order."""
    paths: list = []

    def rec(x, path):
        if x is None:
            return
        ch = _children(x)
        if ch is None:
            paths.append(path)
            return
        keys, children, _ = ch
        for k, c in zip(keys, children):
            rec(c, path + (k,))

    rec(tree, ())
    return paths
