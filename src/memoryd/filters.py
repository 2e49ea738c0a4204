"""mem0's filter language, parsed into a typed tree the stores compile to SQL.

The language (mem0's platform and OSS ``filters``)::

    {"user_id": "alice"}                               equality
    {"agent_id": "*"}                                  any value (the field is set)
    {"categories": ["work", "travel"]}                 a list is "in"
    {"created_at": {"gte": "2026-01-01", "lt": "2026-02-01"}}
    {"AND": [{...}, {...}]}  {"OR": [...]}  {"NOT": [...]}
    {"metadata": {"project": "orion"}}  or  {"project": "orion"}   a metadata key

Operators: eq, ne, in, nin, gt, gte, lt, lte, contains, icontains (and ``*``).
Fields: user_id, agent_id, run_id, app_id (kept in metadata), created_at,
updated_at, categories (memoryd's one category) and metadata keys. Several keys
in one object are ANDed; ``NOT`` negates the AND of its list.

:func:`parse` checks everything a caller can get wrong (an unknown operator, an
operator that does not apply to a field, a metadata key that is not a plain name,
a value of the wrong type) and raises :class:`FilterError` (400) naming it. The
tree is then compiled to parameterised SQL by the store (``store/filter_sql.py``),
never evaluated over a page in Python. Scope and tenancy are separate
:class:`~memoryd.models.Filters` fields, ANDed on top: a filter narrows what a
key may see, it never widens it.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memoryd.errors import InvalidInputError

__all__ = [
    "EVIDENCE_TURN",
    "And",
    "Cond",
    "FilterError",
    "FilterNode",
    "Not",
    "Or",
    "parse",
    "pinned",
]

Op = Literal["eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains", "icontains", "exists"]
OPERATORS: tuple[str, ...] = (
    "eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains", "icontains",
)  # fmt: skip
WILDCARD = "*"
Kind = Literal["id", "time", "category", "metadata"]
#: the fields with a column of their own, and what kind of value they hold
FIELDS: dict[str, Kind] = {
    "user_id": "id",
    "agent_id": "id",
    "run_id": "id",
    "created_at": "time",
    "updated_at": "time",
    "categories": "category",
}
#: fields kept as metadata keys (memoryd has no column for mem0's app)
META_FIELDS = frozenset({"app_id"})
#: mem0 fields memoryd has nothing to filter on
UNSUPPORTED = frozenset({"keywords", "org_id", "project_id", "memory_ids", "entities"})
_OPS_BY_KIND: dict[Kind, frozenset[str]] = {
    "id": frozenset({"eq", "ne", "in", "nin", "contains", "icontains", "exists"}),
    "time": frozenset({"eq", "ne", "gt", "gte", "lt", "lte", "exists"}),
    "category": frozenset({"eq", "ne", "in", "nin", "contains", "icontains", "exists"}),
    "metadata": frozenset({*OPERATORS, "exists"}),
}
_META_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-]{0,63}")
MAX_DEPTH = 8
MAX_CONDITIONS = 100
MAX_LIST = 500

#: the metadata key (true) of a conversation turn stored beside the facts extracted
#: from it: evidence for them, left out of lists by default (``Filters.evidence_turns``)
EVIDENCE_TURN = "evidence_turn"


class FilterError(InvalidInputError):
    """A filter memoryd cannot read: the message names the part, the hint the fix."""

    status_code = 400


class Cond(BaseModel):
    """One condition: ``field`` (a column, or ``metadata`` with ``key``) ``op`` ``value``."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["cond"] = "cond"
    field: str
    key: str | None = None  # the metadata key, for field "metadata"
    op: Op
    value: Any = None  # a scalar, a list of scalars (in, nin) or a datetime (time fields)


class And(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: Literal["and"] = "and"
    items: list[FilterNode]


class Or(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: Literal["or"] = "or"
    items: list[FilterNode]


class Not(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: Literal["not"] = "not"
    item: FilterNode


FilterNode = Annotated[Cond | And | Or | Not, Field(discriminator="kind")]
for _model in (And, Or, Not):
    _model.model_rebuild()


def parse(raw: Any) -> FilterNode | None:
    """The tree of a mem0 filter object; None for an empty one."""
    if raw is None:
        return None
    counter = [0]
    node = _object(raw, "filters", 0, counter)
    return node


def both(a: FilterNode | None, b: FilterNode | None) -> FilterNode | None:
    """``a AND b`` (either may be None)."""
    if a is None or b is None:
        return a if b is None else b
    return And(items=[a, b])


def pinned(node: FilterNode | None, field: str) -> str | None:
    """The one value ``field`` must equal for any row to match, when the filter says
    so at its top (``{"user_id": "a"}`` or an AND holding it); None otherwise. The
    platform routes act as that user or agent, so a key's tenancy check sees it."""
    if node is None:
        return None
    if isinstance(node, Cond):
        if node.field == field and node.op == "eq" and isinstance(node.value, str):
            return node.value
        return None
    if isinstance(node, And):
        found = {v for item in node.items if (v := pinned(item, field)) is not None}
        return found.pop() if len(found) == 1 else None
    return None


# -- parsing -----------------------------------------------------------------------------------
def _object(raw: Any, where: str, depth: int, counter: list[int]) -> FilterNode | None:
    if not isinstance(raw, dict):
        raise FilterError(
            f"{where} must be a JSON object, not {type(raw).__name__}",
            'write e.g. {"user_id": "alice"} or {"AND": [{...}, {...}]}',
        )
    if depth > MAX_DEPTH:
        raise FilterError(
            f"{where} nests deeper than {MAX_DEPTH} levels", "flatten the AND/OR/NOT nesting"
        )
    items: list[FilterNode] = []
    for name, value in raw.items():
        if not isinstance(name, str):
            raise FilterError(f"{where} has a key that is not text", "use field names as keys")
        here = f"{where}.{name}"
        upper = name.upper()
        if upper in ("AND", "OR", "NOT") and name in (upper, name.lower()):
            items.append(_logical(upper, value, here, depth, counter))
        elif name == "metadata":
            if not isinstance(value, dict):
                raise FilterError(
                    f"{here} must be an object of metadata keys",
                    'write {"metadata": {"project": "orion"}}',
                )
            for key, cond in value.items():
                items.extend(
                    _field("metadata", _meta_key(key, here), cond, f"{here}.{key}", counter)
                )
        elif name.startswith("metadata."):
            key = _meta_key(name.removeprefix("metadata."), where)
            items.extend(_field("metadata", key, value, here, counter))
        elif name in FIELDS:
            items.extend(_field(name, None, value, here, counter))
        elif name in META_FIELDS:
            items.extend(_field("metadata", name, value, here, counter))
        elif name in UNSUPPORTED:
            raise FilterError(
                f"filter field {name!r} is not supported by memoryd",
                f"filter on {', '.join([*FIELDS, *sorted(META_FIELDS)])} or a metadata key",
            )
        else:  # mem0 OSS: a bare key is a metadata key
            items.extend(_field("metadata", _meta_key(name, where), value, here, counter))
    if not items:
        return None
    return items[0] if len(items) == 1 else And(items=items)


def _logical(op: str, value: Any, where: str, depth: int, counter: list[int]) -> FilterNode:
    listed = [value] if op == "NOT" and isinstance(value, dict) else value
    if not isinstance(listed, list) or not listed:
        raise FilterError(
            f"{where} must be a non-empty list of filter objects",
            f'write {{"{op}": [{{"user_id": "alice"}}, {{"agent_id": "bot"}}]}}',
        )
    parts = [
        n
        for i, item in enumerate(listed)
        if (n := _object(item, f"{where}[{i}]", depth + 1, counter)) is not None
    ]
    if not parts:
        raise FilterError(f"{where} holds only empty objects", "give each a condition")
    if op == "NOT":
        return Not(item=parts[0] if len(parts) == 1 else And(items=parts))
    if len(parts) == 1:
        return parts[0]
    return And(items=parts) if op == "AND" else Or(items=parts)


def _meta_key(key: Any, where: str) -> str:
    if not isinstance(key, str) or not _META_KEY.fullmatch(key):
        raise FilterError(
            f"{where}: {str(key)[:70]!r} is not a filter field or a metadata key memoryd accepts",
            f"use one of {', '.join([*FIELDS, *sorted(META_FIELDS)])}, AND/OR/NOT, or a metadata "
            "key of letters, digits, _ and - (at most 64)",
        )
    return key


def _field(field: str, key: str | None, raw: Any, where: str, counter: list[int]) -> list[Cond]:
    if isinstance(raw, dict):
        if not raw:
            raise FilterError(f"{where} has no operator", f"use one of {', '.join(OPERATORS)}")
        ops = list(raw.items())
    elif isinstance(raw, list):
        ops = [("in", raw)]
    else:
        ops = [("eq", raw)]
    out: list[Cond] = []
    for op, value in ops:
        counter[0] += 1
        if counter[0] > MAX_CONDITIONS:
            raise FilterError(
                f"the filter has more than {MAX_CONDITIONS} conditions", "split the request"
            )
        out.append(_cond(field, key, op, value, where))
    return out


def _cond(field: str, key: str | None, op: Any, value: Any, where: str) -> Cond:
    kind: Kind = "metadata" if field == "metadata" else FIELDS[field]
    if op not in OPERATORS:
        raise FilterError(
            f"unknown filter operator {str(op)[:40]!r} in {where}",
            f"use one of {', '.join(OPERATORS)} (or the value {WILDCARD!r} for any value)",
        )
    if op == "eq" and value == WILDCARD:
        op = "exists"
    name = f"metadata key {key!r}" if key else field
    if op not in _OPS_BY_KIND[kind]:
        allowed = sorted(_OPS_BY_KIND[kind] - {"exists"})
        raise FilterError(
            f"operator {op!r} does not apply to {name} ({where})",
            f"use one of {', '.join(allowed)} on {name}",
        )
    return Cond(field=field, key=key, op=op, value=_value(kind, op, value, where))


def _value(kind: Kind, op: str, value: Any, where: str) -> Any:
    if op == "exists":
        return None
    if op in ("in", "nin"):
        if not isinstance(value, list) or len(value) > MAX_LIST:
            raise FilterError(
                f"{where}: {op} needs a list (at most {MAX_LIST} values)",
                f'write {{"{op}": ["a", "b"]}}',
            )
        return [_scalar(kind, "eq", v, where) for v in value]
    return _scalar(kind, op, value, where)


def _scalar(kind: Kind, op: str, value: Any, where: str) -> Any:
    if kind == "time":
        return _time(value, where)
    if kind in ("id", "category") or op in ("contains", "icontains"):
        if not isinstance(value, str) or not value:
            raise FilterError(
                f"{where}: {op} needs non-empty text, got {value!r:.60}", "quote the value"
            )
        return value
    if op in ("gt", "gte", "lt", "lte"):
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise FilterError(
                f"{where}: {op} compares numbers or text, got {value!r:.60}",
                'write e.g. {"gte": 5} or {"lt": "2026-01-01"}',
            )
        return value
    if isinstance(value, dict | list):
        raise FilterError(
            f"{where}: a metadata value to compare must be text, a number, true/false or null",
            'use {"in": [...]} for several values',
        )
    return value


def _time(value: Any, where: str) -> datetime:
    when: datetime | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            when = datetime.fromtimestamp(float(value), UTC)
        except (OverflowError, OSError, ValueError):
            when = None
    elif isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            try:
                d = date.fromisoformat(text)
                when = datetime(d.year, d.month, d.day, tzinfo=UTC)
            except ValueError:
                when = None
    if when is None:
        raise FilterError(
            f"{where}: {str(value)[:60]!r} is not a time",
            'send ISO 8601 ("2026-03-27" or "2026-03-27T09:15:00Z") or Unix seconds',
        )
    return when if when.tzinfo else when.replace(tzinfo=UTC)
