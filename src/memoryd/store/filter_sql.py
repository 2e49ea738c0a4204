"""A filter tree (:mod:`memoryd.filters`) as one parameterised SQL condition.

Columns are spelled the same in both stores; metadata is a JSON text column, read
with SQLite's JSON1 functions or PostgreSQL's ``jsonb`` operators, and the two
:class:`FilterSQL` classes say only that part. Values are always parameters; a
metadata key is checked by the parser (letters, digits, ``_`` and ``-``) and is
a parameter too. Every condition is two-valued where a NULL could hide a row: a
``NOT`` of a condition on a NULL column (no agent, no such metadata key) matches.

Comparison rules, the same on both stores: a metadata value equals a filter value
of the same JSON type (``5`` and ``5.0`` are equal, ``"5"`` and ``5`` are not);
``gt``/``gte``/``lt``/``lte`` compare numbers with numbers and text with text
(byte order), and never match a value of the other type; ``contains`` is a
substring of text, or an element of a list (``icontains``: ignoring case).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from memoryd.filters import EVIDENCE_TURN, And, Cond, FilterNode, Not, Or

#: the filter's column fields and the table's columns
_COLUMNS = {
    "user_id": "user_id",
    "agent_id": "agent_id",
    "run_id": "run_id",
    "created_at": "created_at",
    "updated_at": "updated_at",
    "categories": "category",
}
_COMPARE = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


class FilterSQL:
    """What both databases share; a subclass spells metadata and substring search."""

    mark = "?"

    def __init__(
        self,
        is_in: Callable[[str, Sequence[Any]], tuple[str, list[Any]]],
        time_in: Callable[[datetime], Any],
    ) -> None:
        self.is_in = is_in
        self.time_in = time_in

    def compile(self, node: FilterNode) -> tuple[str, list[Any]]:
        if isinstance(node, And | Or):
            parts = [self.compile(n) for n in node.items]
            joiner = " AND " if isinstance(node, And) else " OR "
            return "(" + joiner.join(p[0] for p in parts) + ")", [x for p in parts for x in p[1]]
        if isinstance(node, Not):
            sql, params = self.compile(node.item)
            return f"NOT COALESCE({sql}, FALSE)", params
        if node.field == "metadata":
            assert node.key is not None
            return self.metadata(node.key, node)
        return self.column(_COLUMNS[node.field], node)

    # -- columns ---------------------------------------------------------------------------------
    def column(self, col: str, c: Cond) -> tuple[str, list[Any]]:
        m = self.mark
        value = self.time_in(c.value) if isinstance(c.value, datetime) else c.value
        category = col == "category"  # one category: contains is membership
        if c.op == "exists":
            return f"({col} IS NOT NULL)", []
        if c.op == "eq" or (category and c.op == "contains"):
            return f"({col} = {m})", [value]
        if c.op == "ne":
            return f"({col} IS NULL OR {col} <> {m})", [value]
        if c.op in ("in", "nin"):
            sql, params = self.is_in(col, c.value)
            return (f"({sql})" if c.op == "in" else f"({col} IS NULL OR NOT ({sql}))"), params
        if c.op in _COMPARE:
            return f"({col} {_COMPARE[c.op]} {m})", [value]
        if c.op == "icontains" and category:
            return f"(lower({col}) = lower({m}))", [value]
        if c.op == "contains":
            return f"({self.find(col, m)})", [value]
        return f"({self.find(f'lower({col})', f'lower({m})')})", [value]  # icontains

    def find(self, haystack: str, needle: str) -> str:
        """``needle`` occurs in ``haystack`` (SQL expressions)."""
        raise NotImplementedError

    def metadata(self, key: str, c: Cond) -> tuple[str, list[Any]]:
        raise NotImplementedError

    def negate(self, sql: str) -> str:
        return f"NOT COALESCE({sql}, FALSE)"

    def evidence_turn(self) -> str:
        """The row's metadata marks it a turn kept as evidence (``EVIDENCE_TURN``: true)."""
        raise NotImplementedError


class SQLiteFilterSQL(FilterSQL):
    """SQLite's JSON1: ``json_type`` and ``json_extract`` on the path ``$."key"``."""

    mark = "?"

    def find(self, haystack: str, needle: str) -> str:
        return f"instr({haystack}, {needle}) > 0"

    def evidence_turn(self) -> str:
        return f"json_type(metadata, '$.{EVIDENCE_TURN}') = 'true'"

    def metadata(self, key: str, c: Cond) -> tuple[str, list[Any]]:
        path = f'$."{key}"'  # the key has no quote (filters._META_KEY)
        typ = "json_type(metadata, ?)"
        val = "json_extract(metadata, ?)"
        if c.op == "exists":
            return f"({typ} IS NOT NULL)", [path]
        if c.op in ("eq", "ne", "in", "nin"):
            values = c.value if c.op in ("in", "nin") else [c.value]
            parts: list[str] = []
            params: list[Any] = []
            for v in values:
                sql, p = self._equals(typ, val, path, v)
                parts.append(sql)
                params += p
            any_of = "(" + (" OR ".join(parts) or "0 = 1") + ")"
            return (any_of if c.op in ("eq", "in") else self.negate(any_of)), params
        if c.op in _COMPARE:
            types = "('text')" if isinstance(c.value, str) else "('integer', 'real')"
            return (
                f"({typ} IN {types} AND {val} {_COMPARE[c.op]} ?)",
                [path, path, c.value],
            )
        fold = c.op == "icontains"
        hay, needle = ("lower(e.value)", "lower(?)") if fold else ("e.value", "?")
        text_hay = f"lower({val})" if fold else val
        return (
            f"(CASE {typ} WHEN 'text' THEN {self.find(text_hay, needle)}"
            f" WHEN 'array' THEN EXISTS (SELECT 1 FROM json_each(metadata, ?) AS e"
            f" WHERE e.type = 'text' AND {hay} = {needle}) ELSE 0 END)",
            [path, path, c.value, path, c.value],
        )

    @staticmethod
    def _equals(typ: str, val: str, path: str, v: Any) -> tuple[str, list[Any]]:
        if v is None:
            return f"{typ} = 'null'", [path]
        if isinstance(v, bool):
            return f"{typ} = '{'true' if v else 'false'}'", [path]
        if isinstance(v, int | float):
            return f"({typ} IN ('integer', 'real') AND {val} = ?)", [path, path, v]
        return f"({typ} = 'text' AND {val} = ?)", [path, path, v]


class PostgresFilterSQL(FilterSQL):
    """PostgreSQL's ``jsonb``: the metadata text column as ``jsonb``, ``-> key``."""

    mark = "%s"

    def find(self, haystack: str, needle: str) -> str:
        return f"strpos({haystack}, {needle}) > 0"

    def evidence_turn(self) -> str:
        return f"(metadata::jsonb -> '{EVIDENCE_TURN}') = 'true'::jsonb"

    def metadata(self, key: str, c: Cond) -> tuple[str, list[Any]]:
        x = "(metadata::jsonb -> %s)"
        if c.op == "exists":
            return f"({x} IS NOT NULL)", [key]
        if c.op in ("eq", "ne", "in", "nin"):
            values = c.value if c.op in ("in", "nin") else [c.value]
            any_of = f"({x} = ANY(%s::jsonb[]))"
            params = [key, [json.dumps(v) for v in values]]
            return (any_of if c.op in ("eq", "in") else self.negate(any_of)), params
        if c.op in _COMPARE:
            if isinstance(c.value, str):
                typed = f"(CASE WHEN jsonb_typeof({x}) = 'string' THEN {x} #>> '{{}}' END)"
                return f'({typed} COLLATE "C" {_COMPARE[c.op]} %s)', [key, key, c.value]
            typed = f"(CASE WHEN jsonb_typeof({x}) = 'number' THEN ({x} #>> '{{}}')::numeric END)"
            return f"({typed} {_COMPARE[c.op]} %s::numeric)", [key, key, c.value]
        fold = c.op == "icontains"
        text = f"lower({x} #>> '{{}}')" if fold else f"({x} #>> '{{}}')"
        needle = "lower(%s)" if fold else "%s"
        element = "lower(e #>> '{}')" if fold else "(e #>> '{}')"
        return (
            f"(CASE jsonb_typeof({x}) WHEN 'string' THEN {self.find(text, needle)}"
            f" WHEN 'array' THEN EXISTS (SELECT 1 FROM jsonb_array_elements({x}) AS e"
            f" WHERE jsonb_typeof(e) = 'string' AND {element} = {needle}) ELSE FALSE END)",
            [key, key, c.value, key, c.value],
        )
