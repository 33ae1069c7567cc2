"""LangGraph's store filter and namespace-match semantics, for `MnemicStore`'s search and listing.

A filter maps a field to a value or to operators (`$eq $ne $gt $gte $lt $lte`). The field is a key
of the item's value or, like SqliteStore and PostgresStore, a dotted path into nested objects
(`{"user.access-level": "admin"}`); a key that itself contains the dot wins over the path. A
missing field reads as None: it equals a None filter value and fails every ordering comparison
(InMemoryStore raises there). Lists match exactly; a nested dict matches as a subset; booleans
never equal numbers (JSON keeps them apart).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.store.base import MatchCondition

FILTER_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def value_at(value: Any, field: str) -> Any:
    """The value's field `field` (a key, or a dotted path into nested objects); None when absent."""
    if not isinstance(value, Mapping):
        return None
    if field in value:
        return value[field]
    current: Any = value
    for part in field.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def matches_filter(value: Any, filter: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a LangGraph search filter."""
    return not filter or all(compare(value_at(value, field), expected) for field, expected in filter.items())


def compare(actual: Any, expected: Any) -> bool:
    """LangGraph's filter semantics: operators, nested-dict subsets, exact lists, plain equality."""
    if isinstance(expected, Mapping):
        if any(k.startswith("$") for k in expected):
            return all(_apply(actual, op, value) for op, value in expected.items())
        if not isinstance(actual, Mapping):
            return False
        return all(compare(actual.get(k), v) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        return (isinstance(actual, (list, tuple)) and len(actual) == len(expected)
                and all(compare(a, e) for a, e in zip(actual, expected, strict=True)))
    return _equal(actual, expected)


def _equal(a: Any, b: Any) -> bool:
    # JSON keeps booleans and numbers apart: {"active": True} must not match a value of 1.
    return isinstance(a, bool) == isinstance(b, bool) and bool(a == b)


def _orderable(a: Any, b: Any) -> bool:
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    return (isinstance(a, numbers) and isinstance(b, numbers)) or (isinstance(a, str) and isinstance(b, str))


def _apply(actual: Any, operator: str, value: Any) -> bool:
    if operator == "$eq":
        return _equal(actual, value)
    if operator == "$ne":
        return not _equal(actual, value)
    if operator not in FILTER_OPERATORS:
        raise ValueError(f"unsupported filter operator {operator!r}; use one of {', '.join(FILTER_OPERATORS)}")
    if actual is None or not _orderable(actual, value):
        return False  # a missing or differently typed field does not match (InMemoryStore raises)
    if operator == "$gt":
        return bool(actual > value)
    if operator == "$gte":
        return bool(actual >= value)
    if operator == "$lt":
        return bool(actual < value)
    return bool(actual <= value)


def matches_namespace(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    """Whether a namespace meets a list_namespaces prefix/suffix condition ("*" is one label; a
    path given as one string is one label, as LangGraph's own store suite writes it)."""
    path = (condition.path,) if isinstance(condition.path, str) else tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path, strict=False) if condition.match_type == "prefix" else \
        zip(reversed(namespace), reversed(path), strict=False)
    return all(p == "*" or n == p for n, p in pairs)


__all__ = ["FILTER_OPERATORS", "compare", "matches_filter", "matches_namespace", "value_at"]
