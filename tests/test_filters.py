"""mem0's filter language (memoryd.filters), compiled to SQL by each store.

The same expressions run on SQLite and, with MEMORYD_TEST_PG=1, on PostgreSQL
(``store`` is parametrised by conftest), through the store's list, count, vector
and keyword search: the filter is evaluated in the database, never over a page.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from memoryd.filters import FilterError, parse
from memoryd.models import Filters, MemoryRecord, Origin
from memoryd.store import Store
from tests.conftest import FULL

DAY = datetime(2026, 1, 1, tzinfo=UTC)

#: name -> (user, agent, run, category, metadata, day of January, updated day)
ROWS: dict[str, tuple[str, str | None, str | None, str | None, dict[str, Any], int]] = {
    "a1": ("alice", "bot", None, "work", {"project": "orion", "priority": 5, "tags": ["Red", "blue"]}, 1),
    "a2": ("alice", None, "2026-01-04", None, {"project": "Apollo", "priority": 2.5, "done": True}, 4),
    "a3": ("alice", "helper", None, "travel", {"project": "orion", "app_id": "crm", "priority": "5"}, 7),
    "b1": ("bob", "bot", None, "work", {"priority": 9, "done": False, "note": None}, 10),
    "b2": ("bob", None, None, "Travel", {"tags": ["green"], "app_id": "web"}, 13),
    "c1": ("carol", "bot", "2026-01-16", None, {}, 16),
}  # fmt: skip

#: expression -> the rows it admits
CASES: list[tuple[dict[str, Any], set[str]]] = [
    ({"user_id": "alice"}, {"a1", "a2", "a3"}),
    ({"user_id": {"eq": "bob"}}, {"b1", "b2"}),
    ({"user_id": {"ne": "alice"}}, {"b1", "b2", "c1"}),
    ({"user_id": ["alice", "carol"]}, {"a1", "a2", "a3", "c1"}),
    ({"user_id": {"in": ["bob"]}}, {"b1", "b2"}),
    ({"user_id": {"nin": ["alice", "bob"]}}, {"c1"}),
    ({"user_id": {"contains": "o"}}, {"b1", "b2", "c1"}),
    ({"user_id": {"icontains": "ALI"}}, {"a1", "a2", "a3"}),
    ({"agent_id": "*"}, {"a1", "a3", "b1", "c1"}),
    ({"agent_id": {"ne": "bot"}}, {"a2", "a3", "b2"}),  # no agent is "not bot"
    ({"NOT": [{"agent_id": "bot"}]}, {"a2", "a3", "b2"}),  # NOT of a NULL column matches
    ({"agent_id": {"nin": ["bot"]}}, {"a2", "a3", "b2"}),
    ({"run_id": "*"}, {"a2", "c1"}),
    ({"AND": [{"user_id": "alice"}, {"agent_id": "bot"}]}, {"a1"}),
    ({"OR": [{"user_id": "carol"}, {"agent_id": "helper"}]}, {"a3", "c1"}),
    ({"user_id": "alice", "agent_id": "*"}, {"a1", "a3"}),  # several keys: AND
    ({"NOT": [{"user_id": "alice"}, {"agent_id": "bot"}]}, {"a2", "a3", "b1", "b2", "c1"}),
    ({"created_at": {"gte": "2026-01-07"}}, {"a3", "b1", "b2", "c1"}),
    ({"created_at": {"gt": "2026-01-07", "lt": "2026-01-13T00:00:00Z"}}, {"b1"}),
    ({"created_at": {"lte": DAY.replace(day=4).timestamp()}}, {"a1", "a2"}),  # Unix seconds
    ({"updated_at": {"gte": "2026-01-20"}}, {"a1"}),
    ({"categories": {"contains": "work"}}, {"a1", "b1"}),
    ({"categories": {"in": ["travel", "work"]}}, {"a1", "a3", "b1"}),
    ({"categories": {"icontains": "travel"}}, {"a3", "b2"}),
    ({"categories": "*"}, {"a1", "a3", "b1", "b2"}),
    ({"categories": {"ne": "work"}}, {"a2", "a3", "b2", "c1"}),
    ({"metadata": {"project": "orion"}}, {"a1", "a3"}),
    ({"project": "orion"}, {"a1", "a3"}),  # mem0 OSS: a bare key is a metadata key
    ({"metadata.project": {"icontains": "APO"}}, {"a2"}),
    ({"project": {"contains": "ri"}}, {"a1", "a3"}),
    ({"project": {"ne": "orion"}}, {"a2", "b1", "b2", "c1"}),  # no key is "not orion"
    ({"project": {"nin": ["orion", "Apollo"]}}, {"b1", "b2", "c1"}),
    ({"project": "*"}, {"a1", "a2", "a3"}),
    ({"priority": 5}, {"a1"}),  # the number, not the text "5"
    ({"priority": "5"}, {"a3"}),
    ({"priority": {"gte": 5}}, {"a1", "b1"}),  # numbers compare with numbers only
    ({"priority": {"lt": 5}}, {"a2"}),
    ({"priority": {"gt": 2.4, "lte": 5.0}}, {"a1", "a2"}),
    ({"priority": {"in": [9, "high", 2.5]}}, {"a2", "b1"}),
    ({"done": True}, {"a2"}),
    ({"done": False}, {"b1"}),
    ({"note": None}, {"b1"}),  # a JSON null, not a missing key
    ({"note": "*"}, {"b1"}),
    ({"tags": {"contains": "blue"}}, {"a1"}),  # an element of a list
    ({"tags": {"icontains": "red"}}, {"a1"}),
    ({"tags": {"contains": "gre"}}, set()),  # list elements match whole
    ({"app_id": "crm"}, {"a3"}),  # kept in metadata
    ({"app_id": {"in": ["crm", "web"]}}, {"a3", "b2"}),
    (
        {"OR": [{"AND": [{"user_id": "bob"}, {"priority": {"gt": 1}}]}, {"NOT": {"project": "*"}}]},
        {"b1", "b2", "c1"},
    ),
    ({"AND": [{"user_id": "alice"}, {"OR": [{"priority": 5}, {"done": True}]}]}, {"a1", "a2"}),
]


def _record(name: str, n: int) -> MemoryRecord:
    user, agent, run, category, metadata, day = ROWS[name]
    created = DAY.replace(day=day)
    r = MemoryRecord(
        id=name,
        text=f"orion note {name}: the deploy plan for {user}",
        user_id=user,
        agent_id=agent,
        run_id=run,
        category=category,
        metadata=metadata,
        origin=Origin.API,
        created_at=created,
        updated_at=DAY.replace(day=20) if name == "a1" else created,
    )
    v = np.random.default_rng(n).normal(size=8).astype(np.float32)
    r.embedding = v / np.linalg.norm(v)
    return r


@pytest.fixture
def seeded(store: Store) -> Store:
    store.add([_record(name, n) for n, name in enumerate(ROWS)])
    return store


def test_filter_cases_select_in_the_store(seeded: Store) -> None:
    """Every case of CASES through the store's list, count, vector and keyword search
    (one seeded store per backend; every mismatch is reported)."""
    query = np.random.default_rng(99).normal(size=8).astype(np.float32)
    wrong: list[str] = []
    for expr, expected in CASES:
        f = Filters(where=parse(expr))
        got = {
            "list": {r.id for r in seeded.list(f, limit=100)},
            "vector": {mid for mid, _ in seeded.vector_search(query, f, 100)},
            "keyword": {mid for mid, _ in seeded.keyword_search("orion deploy plan", f, 100)},
        }
        wrong += [
            f"{expr} {how}: {ids} != {expected}" for how, ids in got.items() if ids != expected
        ]
        if seeded.count(f) != len(expected):
            wrong.append(f"{expr} count: {seeded.count(f)} != {len(expected)}")
    assert len(CASES) >= 50 and wrong == []


def test_scope_is_anded_on_top(seeded: Store) -> None:
    """A filter naming another user cannot widen a scope: it narrows it to nothing."""
    f = Filters(user_id="alice", where=parse({"OR": [{"user_id": "bob"}, {"agent_id": "*"}]}))
    assert {r.id for r in seeded.list(f)} == {"a1", "a3"}
    f = Filters(user_id="alice", where=parse({"user_id": "bob"}))
    assert seeded.list(f) == [] and seeded.count(f) == 0


def test_values_are_parameters_not_sql(seeded: Store) -> None:
    hostile = "x' OR '1'='1"
    for expr in ({"user_id": hostile}, {"project": hostile}, {"project": {"icontains": hostile}}):
        assert seeded.list(Filters(where=parse(expr))) == []
    assert len(seeded.list(Filters())) == len(ROWS)  # nothing was dropped


@pytest.mark.parametrize(
    ("expr", "named"),
    [
        ({"user_id": {"like": "a%"}}, "unknown filter operator 'like'"),
        ({"created_at": {"contains": "2026"}}, "operator 'contains' does not apply to created_at"),
        ({"user_id": {"gt": "a"}}, "operator 'gt' does not apply to user_id"),
        ({"keywords": "x"}, "filter field 'keywords' is not supported"),
        ({"bad key": 1}, "'bad key' is not a filter field or a metadata key"),
        ({"metadata": {"a'b": 1}}, '"a\'b" is not a filter field or a metadata key'),
        ({"created_at": {"gte": "last week"}}, "'last week' is not a time"),
        ({"AND": {"user_id": "a"}}, "must be a non-empty list"),
        ({"OR": []}, "must be a non-empty list"),
        ({"priority": {"gte": True}}, "gte compares numbers or text"),
        ({"project": {"eq": {"nested": 1}}}, "a metadata value to compare must be"),
        ({"user_id": {"in": "alice"}}, "in needs a list"),
        ({"user_id": {}}, "has no operator"),
        (["user_id"], "must be a JSON object"),
    ],
)
def test_bad_filters_name_the_problem(expr: Any, named: str) -> None:
    with pytest.raises(FilterError) as err:
        parse(expr)
    assert named in err.value.message
    assert err.value.status_code == 400 and err.value.hint


def test_deep_or_huge_filters_are_refused() -> None:
    deep: dict[str, Any] = {"user_id": "a"}
    for _ in range(12):
        deep = {"AND": [deep]}
    with pytest.raises(FilterError, match="deeper"):
        parse(deep)
    with pytest.raises(FilterError, match="more than 100 conditions"):
        parse({"OR": [{"user_id": f"u{i}"} for i in range(101)]})


# -- the same random filters on every store, against a reference in Python ----------------
def _json_kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    return "number" if isinstance(v, int | float) else type(v).__name__


def _holds(row: tuple[Any, ...], name: str, node: Any) -> bool:
    """What a filter tree means, row by row (the test's reference, not memoryd's code)."""
    from memoryd.filters import And, Not, Or

    if isinstance(node, And):
        return all(_holds(row, name, n) for n in node.items)
    if isinstance(node, Or):
        return any(_holds(row, name, n) for n in node.items)
    if isinstance(node, Not):
        return not _holds(row, name, node.item)
    user, agent, run, category, metadata, day = row
    created = DAY.replace(day=day)
    columns = {
        "user_id": user, "agent_id": agent, "run_id": run, "categories": category,
        "created_at": created, "updated_at": DAY.replace(day=20) if name == "a1" else created,
    }  # fmt: skip
    meta = node.field == "metadata"
    present = node.key in metadata if meta else columns[node.field] is not None
    v = metadata.get(node.key) if meta else columns[node.field]
    x, op = node.value, node.op

    def eq(x: Any) -> bool:
        if meta:
            return present and _json_kind(v) == _json_kind(x) and v == x
        return v is not None and v == x

    if op == "exists":
        return present
    if op in ("eq", "ne"):
        return eq(x) == (op == "eq")
    if op in ("in", "nin"):
        return any(eq(e) for e in x) == (op == "in")
    if op in ("gt", "gte", "lt", "lte"):
        if not present or v is None or _json_kind(v) != _json_kind(x):
            return False
        return {"gt": v > x, "gte": v >= x, "lt": v < x, "lte": v <= x}[op]
    fold = (lambda s: s.lower()) if op == "icontains" else (lambda s: s)
    if node.field == "categories":
        return v is not None and fold(v) == fold(x)
    if isinstance(v, str):
        return fold(x) in fold(v)
    if isinstance(v, list):
        return any(isinstance(e, str) and fold(e) == fold(x) for e in v)
    return False


_IDS = ["alice", "bob", "carol", "ali", "o", "bot", "helper", "2026-01-04"]
_META_VALUES = ["orion", "Apollo", "apo", 5, 2.5, "5", 9, True, False, None, "blue", "RED", "crm"]


def _leaf() -> Any:
    from hypothesis import strategies as st

    def one(keys: list[str], values: Any) -> Any:
        return st.builds(lambda k, v: {k: v}, st.sampled_from(keys), values)

    ids = one(
        ["user_id", "agent_id", "run_id"],
        st.one_of(
            st.sampled_from([*_IDS, "*"]),
            st.lists(st.sampled_from(_IDS), min_size=1, max_size=3),
            st.dictionaries(
                st.sampled_from(["eq", "ne", "contains", "icontains"]),
                st.sampled_from(_IDS),
                min_size=1,
                max_size=2,
            ),
            st.fixed_dictionaries({"nin": st.lists(st.sampled_from(_IDS), min_size=1, max_size=3)}),
        ),
    )
    times = one(
        ["created_at", "updated_at"],
        st.dictionaries(
            st.sampled_from(["eq", "ne", "gt", "gte", "lt", "lte"]),
            st.integers(1, 21).map(lambda d: f"2026-01-{d:02d}"),
            min_size=1,
            max_size=2,
        ),
    )
    categories = st.fixed_dictionaries(
        {
            "categories": st.one_of(
                st.sampled_from(["work", "travel", "Travel", "*"]),
                st.dictionaries(
                    st.sampled_from(["eq", "ne", "contains", "icontains", "in", "nin"]),
                    st.sampled_from(["work", "travel", "TRAVEL"]),
                    min_size=1,
                    max_size=1,
                ).map(lambda d: {k: [v] if k in ("in", "nin") else v for k, v in d.items()}),
            )
        }
    )
    keys = st.sampled_from(["project", "priority", "tags", "done", "note", "app_id", "missing"])
    scalar = st.sampled_from(_META_VALUES)
    meta = (
        st.builds(
            lambda key, op, value: {key: {op: value}},
            keys,
            st.sampled_from(["eq", "ne"]),
            scalar,
        )
        | st.builds(
            lambda key, op, values: {key: {op: values}},
            keys,
            st.sampled_from(["in", "nin"]),
            st.lists(scalar, min_size=1, max_size=3),
        )
        | st.builds(
            lambda key, op, value: {key: {op: value}},
            keys,
            st.sampled_from(["gt", "gte", "lt", "lte"]),
            st.sampled_from([2, 2.5, 5, 9, "Apollo", "m", "orion"]),
        )
        | st.builds(
            lambda key, op, value: {key: {op: value}},
            keys,
            st.sampled_from(["contains", "icontains"]),
            st.sampled_from(["ri", "ORI", "blue", "red", "gre", "crm"]),
        )
        | st.builds(lambda key: {key: "*"}, keys)
    )
    return ids | times | categories | meta


def _trees() -> Any:
    from hypothesis import strategies as st

    return st.recursive(
        _leaf(),
        lambda inner: st.builds(
            lambda op, items: {op: items},
            st.sampled_from(["AND", "OR", "NOT"]),
            st.lists(inner, min_size=1, max_size=3),
        ),
        max_leaves=6,
    )


def test_random_filters_match_the_reference_on_every_store(seeded: Store) -> None:
    """Hypothesis draws filter trees over every field, operator and value type; each
    store's SQL admits exactly the rows the reference does."""
    from hypothesis import HealthCheck, given, settings

    @settings(
        max_examples=2000 if FULL else 300,
        deadline=None,
        derandomize=not FULL,
        suppress_health_check=list(HealthCheck),
    )
    @given(expr=_trees())
    def check(expr: dict[str, Any]) -> None:
        node = parse(expr)
        expected = {name for name, row in ROWS.items() if _holds(row, name, node)}
        got = {r.id for r in seeded.list(Filters(where=node), limit=100)}
        assert got == expected, expr

    check()
