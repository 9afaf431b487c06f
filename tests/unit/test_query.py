"""Tests for mfscore.query: pandas DataFrame.query is the oracle for our own literal queries."""

from __future__ import annotations

import builtins
from contextlib import ExitStack
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mfscore.detection.scorer import DetectionOptions
from mfscore.errors import QueryError
from mfscore.limits import MAX_QUERY_CHARS, MAX_QUERY_COMPARISONS
from mfscore.query import (And, Column, Compare, ListLiteral, Literal, Not, Or, column_names, evaluate, evaluate_text,
                           parse, select)
from mfscore.video.temporal_scorer import TemporalOptions

FRAME = pd.DataFrame({
    "Purpose": ["remove", "add", "clone", "add", "", "remove", "splice", "add", "clone"],
    "Operation": ["PasteSampled", "Blur", "PasteSampled", "", "Crop", "Blur", "PasteSplice", "Crop", "Blur"],
    "ProbeWidth": [100, 250, 3000, 4000, 200, 201, 50, 3001, 1000],
    "ConfidenceScore": [0.5, 0.2, 0.9, 0.31, 0.5, 0.0, 1.0, np.nan, 0.3],
    "IsControl": [False, True, False, False, True, False, False, True, False],
    "IsTarget": ["Y", "N", "Y", "Y", "N", "Y", "", "N", "Y"],
    "Collection": ["Nimble-SCI", "Nimble-WEB", "", "Nimble-SCI", "NC2017", "Nimble-WEB", "Nimble-SCI", "", "NC2017"],
    "Probe Name": ["p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"],
})

ORACLE_QUERIES = [
    "Purpose==['remove']",
    "Purpose==['clone','add']",
    "Purpose!=['add']",
    "Purpose==[]",
    "Collection==['Nimble-SCI'] & IsTarget==['Y']",
    "(Purpose ==['remove'] and IsTarget == ['Y']) or IsTarget == ['N']",
    "Purpose ==['remove'] and IsTarget == ['Y'] or IsTarget == ['N']",
    "Purpose==['remove'] or Operation==['PasteSampled']",
    "Purpose==['remove'] | Operation==['PasteSampled'] & IsTarget=='Y'",
    "200 < ProbeWidth <= 3000",
    "3000 >= ProbeWidth > 200",
    "0.5 < ConfidenceScore",
    "ConfidenceScore==0.5",
    "ConfidenceScore!=0.5",
    "ConfidenceScore >= .3",
    "ConfidenceScore < 1e-3",
    "ProbeWidth > -1",
    "ConfidenceScore >= True",
    "IsControl > 0",
    "'b' > Purpose",
    "ConfidenceScore > 0.3 & Collection==['Nimble-WEB','Nimble-SCI']",
    "IsControl == False",
    "IsControl == True and ProbeWidth < 1000",
    "IsControl",
    "not IsControl",
    "not (ProbeWidth > 100)",
    "not ProbeWidth > 100 or Purpose == 'add'",
    "~(Purpose=='add') | IsTarget=='N'",
    "~(Purpose=='add' | IsTarget=='N')",
    "Purpose in ['add','remove']",
    "Purpose not in ['add']",
    "ProbeWidth in [100, 250.0, 7]",
    "ProbeWidth == [100, 3000]",
    "['add', 'clone'] == Purpose",
    "Purpose == \"add\"",
    "Collection == ''",
    "Collection != ''",
    "Purpose < 'b'",
    "Purpose >= 'clone'",
    "Purpose == Operation",
    "ProbeWidth > ConfidenceScore",
    "`Probe Name` == 'p3'",
    "`Probe Name` in ['p1', 'p9'] or `ProbeWidth` == 50",
    "ProbeWidth == '100'",
    "Purpose == 1",
    "((ProbeWidth > 100) and (ProbeWidth < 3001))",
]


def _rows(mask: np.ndarray) -> list:
    assert isinstance(mask, np.ndarray) and mask.dtype == bool and mask.shape == (len(FRAME),)
    return FRAME.index[mask].tolist()


@pytest.mark.parametrize("query", ORACLE_QUERIES)
def test_select_agrees_with_pandas_query(query):
    assert _rows(select(FRAME, query)) == FRAME.query(query).index.tolist()


def test_oracle_queries_select_something_and_not_everything():
    sizes = {q: int(select(FRAME, q).sum()) for q in ORACLE_QUERIES}
    assert sum(0 < size < len(FRAME) for size in sizes.values()) >= len(ORACLE_QUERIES) - 6


def test_bitwise_operators_bind_looser_than_comparisons():
    node = parse("Collection==['Nimble-SCI'] & IsManipulationTypeRemoval==['Y']")
    assert node == And((Compare("==", Column("Collection"), ListLiteral(("Nimble-SCI",))),
                        Compare("==", Column("IsManipulationTypeRemoval"), ListLiteral(("Y",)))))
    assert parse("a == 1 | b == 2 & c == 3") == Or((
        Compare("==", Column("a"), Literal(1)),
        And((Compare("==", Column("b"), Literal(2)), Compare("==", Column("c"), Literal(3)))),
    ))


def test_tilde_and_not_negate_the_comparison():
    expected = Not(Compare("==", Column("a"), Literal("x")))
    assert parse("~a == 'x'") == expected
    assert parse("not a == 'x'") == expected
    assert parse("not not a == 'x'") == expected.operand


def test_chained_comparison_expands_to_conjunction():
    assert parse("200 < W <= 3000") == And((Compare("<", Literal(200), Column("W")),
                                            Compare("<=", Column("W"), Literal(3000))))


def test_literals():
    assert parse("a == -1.5e2") == Compare("==", Column("a"), Literal(-150.0))
    assert parse("a == --3") == Compare("==", Column("a"), Literal(3))
    assert parse("a == 'it\\'s \\\\ \"q\"'").right == Literal("it's \\ \"q\"")
    assert parse('a in ["x", 1, True, 0.5,]').right == ListLiteral(("x", 1, True, 0.5))
    assert parse("a != []").right == ListLiteral(())
    assert parse("`My Column` == False") == Compare("==", Column("My Column"), Literal(False))


def test_column_names():
    assert column_names(parse("200 < W <= 3000 and not (`P q` in ['x'] | c == d) or True")) == {"W", "P q", "c", "d"}
    assert column_names(parse("1 == 1")) == set()


def test_unknown_column_message():
    with pytest.raises(QueryError) as info:
        select(FRAME, "Purpse==['x']")
    assert info.value.message == "query \"Purpse==['x']\": unknown column 'Purpse'"


def test_unknown_column_is_reported_even_when_short_circuit_would_skip_it():
    with pytest.raises(QueryError, match="unknown column 'Nope'"):
        select(FRAME, "False and Nope == 1")


def test_function_call_message():
    with pytest.raises(QueryError) as info:
        parse("Foo(1)")
    assert info.value.message == 'query "Foo(1)": function calls are not allowed (at character 4)'


REFUSED = [
    ("__import__('os').system('x')", "'__'"),
    ("Purpose.str.len() > 1", "attribute access"),
    ("Purpose[0] == 'a'", "subscripts"),
    ("lambda: 1", "lambda"),
    ("@x == 1", "local variables"),
    ("ProbeWidth ** 2 > 1", "'**'"),
    ("a = 1", "assignment"),
    ("Purpose == 'x'; 1", "semicolons"),
    ("Purpose == 'x", "unterminated string"),
    ("`Probe Name == 'x'", "unterminated backticked name"),
    ("", "empty"),
    ("   ", "empty"),
    ("ProbeWidth + 1 > 2", "arithmetic"),
    ("ProbeWidth - 1 > 2", "arithmetic"),
    ("-ProbeWidth > 2", "minus sign"),
    ("`__class__` == 1", "'__'"),
    ("__x__ == 1", "'__'"),
    ("Purpose == 'a' Purpose", "after a complete condition"),
    ("(Purpose == 'a'", "expected ')'"),
    ("Purpose in ('a', 'b')", "tuples"),
    ("Purpose in Operation", "must be a list"),
    ("ProbeWidth < [1]", "list"),
    ("Purpose == ['a', Operation]", "lists may contain only"),
    ("Purpose == [['a']]", "lists may contain only"),
    ("Purpose is None", "keyword 'is'"),
    ("Purpose == 'a' if True else 1", "keyword 'if'"),
    ("ProbeWidth > 1 &", "end of the query"),
    ("ProbeWidth == 1x", "malformed number"),
    ("Purpose == '\\n'", "escapes"),
    ("Purpose == {'a'}", "unexpected character"),
    ("Purpose == 'é' and Pürpose == 1", "unexpected character"),
    ("not 'x'", "not a condition"),
    ("ProbeWidth > 99999999999999999999", "too large"),
    ("(" * 100 + "a" + ")" * 100, "nested too deeply"),
    ("[1] or a", "not a condition"),
    ("f'x' == Purpose", "unexpected string"),
]


@pytest.mark.parametrize(("query", "fragment"), REFUSED)
def test_refused(query, fragment):
    with pytest.raises(QueryError) as info:
        select(FRAME, query)
    assert fragment in info.value.message


def test_non_boolean_column_is_not_a_condition():
    with pytest.raises(QueryError, match="not boolean"):
        select(FRAME, "Purpose")


def test_ordering_on_mixed_column_is_false_where_not_comparable():
    frame = pd.DataFrame({"W": ["100", "", np.nan, "abc", 300, 7.5, True]}, dtype=object)
    assert select(frame, "W > 50").tolist() == [True, False, False, False, True, False, False]
    assert select(frame, "W < 'b'").tolist() == [True, True, False, True, False, False, False]
    assert select(frame, "not W > 50").tolist() == [False, True, True, True, False, True, True]


def test_string_never_equals_number_and_nan_equals_nothing():
    frame = pd.DataFrame({"W": [100, 200], "C": [np.nan, 1.0], "S": ["100", ""]})
    assert select(frame, "W == '100'").tolist() == [False, False]
    assert select(frame, "S == 100").tolist() == [False, False]
    assert select(frame, "W == 100.0").tolist() == [True, False]
    assert select(frame, "C == True").tolist() == [False, True]
    assert select(frame, "C != 1").tolist() == [True, False]
    assert select(frame, "C not in [1.0]").tolist() == [True, False]


def test_column_against_column_ordering():
    frame = pd.DataFrame({"A": [1, "b", "10", 5, np.nan], "B": [2, "a", "9", "x", 1]}, dtype=object)
    assert select(frame, "A < B").tolist() == [True, False, False, False, False]
    assert select(frame, "A > B").tolist() == [False, True, True, False, False]


def test_literal_against_literal():
    assert select(FRAME, "1 < 2").all()
    assert not select(FRAME, "'a' > 1").any()
    assert select(FRAME, "'a' in ['a', 'b'] and [1, 2] == [1, 2.0]").all()
    assert not select(FRAME, "True == 'True'").any()


def test_non_default_index_and_empty_frame():
    frame = FRAME.set_index(pd.Index(list("abcdefghi")))
    assert frame.index[select(frame, "ProbeWidth > 1000")].tolist() == frame.query("ProbeWidth > 1000").index.tolist()
    empty = FRAME.iloc[:0]
    assert select(empty, "ProbeWidth > 1 or Purpose == 'x'").shape == (0,)


def test_evaluate_with_text_names_the_query():
    with pytest.raises(QueryError, match='^query "q": unknown column'):
        evaluate(parse("Zzz == 1"), FRAME, text="q")
    with pytest.raises(QueryError, match="^unknown column 'Zzz'$"):
        evaluate(parse("Zzz == 1"), FRAME)


def test_nodes_are_frozen():
    node = parse("a == 1")
    with pytest.raises(AttributeError):
        node.op = "!="


# ---- property-based -------------------------------------------------------------------

QUERYISH = st.lists(
    st.sampled_from(["Purpose", "ProbeWidth", "`Probe Name`", "and", "or", "not", "in", "True", "&", "|", "~",
                     "==", "!=", "<", "<=", ">", "=", "-", "(", ")", "[", "]", ",", "'a'", '"b', "\\", "1",
                     ".5", "1e3", "__x__", "@", ".", "f", ";", "**", "`", " "]),
    max_size=12,
).map(" ".join)
ANY_TEXT = st.one_of(st.text(max_size=40), QUERYISH)


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_parse_returns_node_or_query_error(text):
    try:
        node = parse(text)
    except QueryError:
        return
    assert isinstance(node, (Literal, ListLiteral, Column, Compare, Not, And, Or))
    assert all(name in text for name in column_names(node))


CLEAN = pd.DataFrame({
    "Purpose": ["remove", "add", "clone", "add", "", "remove", "splice", "add"],
    "IsTarget": ["Y", "N", "Y", "Y", "N", "Y", "N", "N"],
    "Collection": ["Nimble-SCI", "Nimble-WEB", "", "Nimble-SCI", "NC2017", "Nimble-WEB", "Nimble-SCI", "NC2017"],
    "ProbeWidth": [100, 250, 3000, 4000, 200, 201, 50, 3001],
    "ConfidenceScore": [0.5, 0.2, 0.9, 0.31, 0.5, 0.0, 1.0, 0.75],
    "IsControl": [False, True, False, False, True, False, False, True],
})
STRINGS = {c: sorted(set(CLEAN[c])) + ["absent"] for c in ("Purpose", "IsTarget", "Collection")}
NUMBERS = {"ProbeWidth": [0, 50, 100, 200, 201, 3000, 3001, -5, 250.5],
           "ConfidenceScore": [0, 0.2, 0.31, 0.5, 0.75, 1, -0.5, 2.0]}


def _quote(value: str) -> str:
    return f"'{value}'"


def _num(value) -> str:
    return repr(value)


@st.composite
def comparisons(draw):
    kind = draw(st.sampled_from(["str", "strlist", "num", "numrev", "chain", "numlist", "bool", "colcol"]))
    if kind == "str":
        col = draw(st.sampled_from(sorted(STRINGS)))
        op = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
        return f"{col} {op} {_quote(draw(st.sampled_from(STRINGS[col])))}"
    if kind == "strlist":
        col = draw(st.sampled_from(sorted(STRINGS)))
        op = draw(st.sampled_from(["==", "!=", "in", "not in"]))
        items = draw(st.lists(st.sampled_from(STRINGS[col]), max_size=3))
        return f"{col} {op} [{', '.join(map(_quote, items))}]"
    if kind in ("num", "numrev"):
        col = draw(st.sampled_from(sorted(NUMBERS)))
        op = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
        value = _num(draw(st.sampled_from(NUMBERS[col])))
        return f"{col} {op} {value}" if kind == "num" else f"{value} {op} {col}"
    if kind == "chain":
        col = draw(st.sampled_from(sorted(NUMBERS)))
        low, high = (_num(draw(st.sampled_from(NUMBERS[col]))) for _ in range(2))
        op1, op2 = (draw(st.sampled_from(["<", "<="])) for _ in range(2))
        return f"{low} {op1} {col} {op2} {high}"
    if kind == "numlist":
        col = draw(st.sampled_from(sorted(NUMBERS)))
        items = draw(st.lists(st.sampled_from(NUMBERS[col]), max_size=3))
        return f"{col} {draw(st.sampled_from(['==', '!=', 'in', 'not in']))} [{', '.join(map(_num, items))}]"
    if kind == "bool":
        return draw(st.sampled_from(["IsControl", "IsControl == True", "IsControl == False", "IsControl != True"]))
    return draw(st.sampled_from(["Purpose == Collection", "Purpose != IsTarget", "ProbeWidth > ConfidenceScore",
                                 "ConfidenceScore <= ProbeWidth", "Purpose < Collection"]))


def _combine(children):
    binary = st.tuples(children, st.sampled_from(["and", "or", "&", "|"]), children, st.booleans()).map(
        lambda t: f"({t[0]} {t[1]} {t[2]})" if t[3] else f"{t[0]} {t[1]} {t[2]}")
    negated = st.tuples(st.sampled_from(["not", "~"]), children).map(lambda t: f"{t[0]} ({t[1]})")
    return st.one_of(binary, negated)


QUERIES = st.recursive(comparisons(), _combine, max_leaves=6)


@settings(max_examples=150, deadline=None)
@given(QUERIES)
def test_generated_queries_agree_with_pandas_query(query):
    assert CLEAN.index[select(CLEAN, query)].tolist() == CLEAN.query(query).index.tolist()


def _refuse(*_args, **_kwargs):
    raise AssertionError("user text reached an evaluator")


def _no_code_execution() -> ExitStack:
    stack = ExitStack()
    for target, name in [(builtins, "eval"), (builtins, "exec"), (builtins, "compile"),
                         (pd.DataFrame, "query"), (pd.DataFrame, "eval"), (pd, "eval")]:
        stack.enter_context(mock.patch.object(target, name, _refuse))
    return stack


def test_no_code_execution_guard_is_effective():
    with _no_code_execution(), pytest.raises(AssertionError):
        CLEAN.query("ProbeWidth > 1")
    with _no_code_execution(), pytest.raises(AssertionError):
        eval("1")  # noqa: S307


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(QUERIES, ANY_TEXT)
def test_select_never_executes_code(query, text):
    expected = CLEAN.query(query).index.tolist()
    with _no_code_execution():
        mask = select(CLEAN, query)
        try:
            select(CLEAN, text)
        except QueryError:
            pass
    assert CLEAN.index[mask].tolist() == expected


def test_a_query_over_the_limits_is_refused_in_linear_time():
    with pytest.raises(QueryError, match=f"more than the limit of {MAX_QUERY_CHARS}"):
        parse(" or ".join(["Purpose=='add'"] * 20_000))
    allowed = " or ".join(["A==1"] * MAX_QUERY_COMPARISONS)
    assert isinstance(parse(allowed), Or)
    with pytest.raises(QueryError, match=f"more than {MAX_QUERY_COMPARISONS} comparisons"):
        parse(allowed + " or A==1")


@pytest.mark.parametrize("build", [lambda bad: DetectionOptions(query_mode="q", queries=(bad,)),
                                   lambda bad: TemporalOptions(queries=("*", bad))])
def test_options_refuse_a_bad_query_when_made_before_any_planning(build):
    with pytest.raises(QueryError, match="not allowed"):
        build("__class__ == 1")


# --------------------------------------------------------------------------------------------------
# evaluate_text: evaluate's answer without pandas, on columns pandas reads as text


_WORDS = ["Blur", "heal", "abc", "12", "0123", "True", "NA", "x y"]
_COLUMNS = ["Operation", "Purpose", "ProbeFileID", "Score"]


def _random_query(rng) -> str:
    def operand():
        kind = rng.random()
        if kind < 0.45:
            return rng.choice(_COLUMNS)
        if kind < 0.8:
            return repr(rng.choice(_WORDS))
        if kind < 0.9:
            return "[" + ", ".join(repr(rng.choice(_WORDS)) for _ in range(rng.randint(1, 3))) + "]"
        return rng.choice(["12", "True", "1.5"])

    def term(depth):
        if depth and rng.random() < 0.35:
            return f"({term(depth - 1)} {rng.choice(['and', 'or', '&', '|'])} {term(depth - 1)})"
        if rng.random() < 0.1:
            return f"not {term(depth)}"
        op = rng.choice(["==", "!=", "in", "not in", "==", "<"])
        return f"{operand()} {op} {operand()}"

    return term(2)


def test_evaluate_text_agrees_with_evaluate_on_text_columns(tmp_path):
    import random

    from mfscore.formats.tables import read_table, read_text_columns, reads_as_text

    rng = random.Random(28)
    decided = 0
    for case in range(60):
        rows = [[rng.choice(_WORDS) for _ in _COLUMNS] for _ in range(rng.randint(0, 8))]
        path = tmp_path / f"t{case}.csv"
        path.write_text("\n".join("|".join(r) for r in [_COLUMNS, *rows]) + "\n")
        frame, text = read_table(path), read_text_columns(path)
        as_text = {name: cells for name, cells in text.items() if reads_as_text(name, cells)}
        for _ in range(10):
            query = _random_query(rng)
            try:
                node = parse(query)
            except QueryError:
                continue
            mask = evaluate_text(node, as_text, len(rows))
            if mask is not None:
                decided += 1
                assert mask == evaluate(node, frame, text=query).tolist(), (query, rows)
    assert decided > 100  # about a fifth of the 600 queries: the others order, compare numbers or name a number column


def test_evaluate_text_leaves_what_it_cannot_decide():
    columns = {"Operation": ["Blur", "heal"]}
    for query in ["Operation < 'c'", "Operation == 1", "Operation in ['Blur', 2]", "Missing == 'x'", "Operation",
                  "(Operation == 'Blur') == True"]:
        assert evaluate_text(parse(query), columns, 2) is None, query
    assert evaluate_text(parse("Operation in ['Blur'] or 'a' == 'b'"), columns, 2) == [True, False]
    assert evaluate_text(parse("['heal'] == Operation"), columns, 2) == [False, True]
