"""Safe whitelist parser and evaluator for row-selection queries (``-q``, ``-qp``, ``-qm``).

It replaces ``pandas.DataFrame.query`` for user-supplied text: the text is tokenized and
parsed into a small tree of frozen dataclasses and evaluated with plain pandas/numpy
operations; it never reaches ``eval``, ``exec``, ``compile``, ``ast`` or ``DataFrame.query``.

Grammar, loosest binding first::

    query      := or
    or         := and (("or" | "|") and)*
    and        := not (("and" | "&") not)*
    not        := ("not" | "~")* comparison
    comparison := operand (("==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "not in") operand)*
    operand    := "-"* atom                                 (minus only on numbers)
    atom       := number | string | True | False | Name | `any name` | "(" or ")"
                | "[" [literal ("," literal)* [","]] "]"

As in pandas, ``&`` and ``|`` are the same operators as ``and`` and ``or``, so they bind
looser than comparisons. ``~`` is the same operator as ``not``: ``~Col == 'x'`` negates the
comparison (pandas would apply ``~`` to the column). Comparisons chain as in Python:
``200 < W <= 3000`` means ``200 < W and W <= 3000``. Names are column names; names that
start and end with ``__``, function calls, attributes, subscripts, ``@variables``,
arithmetic (other than a minus sign on a number), lambdas and assignments are refused.

Semantics follow pandas where pandas is defined:

* ``==`` is ``Series.eq``; ``==`` or ``in`` with a list is ``Series.isin``; ``!=`` and
  ``not in`` are their negation. A string never equals a number, ``1 == 1.0 == True``,
  and NaN equals nothing (so ``NaN != x`` is true).
* ``<``, ``<=``, ``>``, ``>=`` against a number compare ``pd.to_numeric(col, errors='coerce')``;
  against a string they compare the cells that are strings. Cells that cannot be compared
  (NaN, '', text against a number, numbers against text) are simply False, where pandas
  would raise on a mixed-type column. Two columns compare numerically where both cells
  are numeric, as strings where both are strings, and are False otherwise.
* A boolean column may stand alone as a condition (``IsControl``, ``not IsControl``).

``evaluate`` works on a pandas frame; ``evaluate_text`` gives the same answer without pandas on columns
that pandas reads as plain strings, for the comparisons whose meaning on strings is plain equality, and
says when it cannot. numpy and pandas are imported by the frame evaluator only.
"""

from __future__ import annotations

import itertools

import keyword
import operator
import re
from dataclasses import dataclass
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Iterable, Iterator, Union

from mfscore.errors import QueryError
from mfscore.limits import MAX_QUERY_CHARS, MAX_QUERY_COMPARISONS

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

__all__ = ["Node", "Literal", "ListLiteral", "Column", "Compare", "Not", "And", "Or",
           "parse", "column_names", "evaluate", "evaluate_text", "select"]

Scalar = Union[str, int, float, bool]


@dataclass(frozen=True)
class Literal:
    """A string, number or boolean constant."""
    value: Scalar


@dataclass(frozen=True)
class ListLiteral:
    """A bracketed list of constants (membership)."""
    values: tuple[Scalar, ...]


@dataclass(frozen=True)
class Column:
    """A reference to a column of the frame."""
    name: str


@dataclass(frozen=True)
class Compare:
    """``left op right`` with op one of ==, !=, <, <=, >, >=, in, not in."""
    op: str
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Not:
    """Elementwise negation."""
    operand: "Node"


@dataclass(frozen=True)
class And:
    """Elementwise conjunction of two or more conditions."""
    operands: tuple["Node", ...]


@dataclass(frozen=True)
class Or:
    """Elementwise disjunction of two or more conditions."""
    operands: tuple["Node", ...]


Node = Union[Literal, ListLiteral, Column, Compare, Not, And, Or]


@dataclass(frozen=True)
class _Token:
    kind: str  # num, str, name, kw, op, end
    value: object
    pos: int


_KEYWORDS = {"and", "or", "not", "in", "True", "False"}
_NUMBER = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPS = ("==", "!=", "<=", ">=", "<", ">", "(", ")", "[", "]", ",", "&", "|", "~", "-")
_REFUSED = (("**", "the power operator '**' is not allowed"),
            ("=", "assignment '=' is not allowed; use '==' to compare"),
            (";", "semicolons are not allowed"),
            ("@", "local variables ('@name') are not allowed"),
            (".", "attribute access ('.') is not allowed"),
            (":", "':' is not allowed (no lambdas, slices or dictionaries)"),
            *((sym, "arithmetic is not allowed") for sym in "+*/%"))
_COMPARE_OPS = ("==", "!=", "<", "<=", ">", ">=")
_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_MAX_DEPTH = 40


def _fail(text: str, problem: str, pos: int | None = None) -> QueryError:
    where = "" if pos is None else f" (at character {pos + 1})"
    shown = text if len(text) <= 100 else text[:97] + "..."
    return QueryError(f'query "{shown}": {problem}{where}' if text else problem + where)


def _check_name(text: str, name: str, pos: int) -> None:
    if name.startswith("__") and name.endswith("__"):
        raise _fail(text, f"names starting and ending with '__' are not allowed ({name!r})", pos)
    if name == "lambda":
        raise _fail(text, "lambda expressions are not allowed", pos)
    if keyword.iskeyword(name):
        raise _fail(text, f"the Python keyword {name!r} is not allowed", pos)


def _scan_string(text: str, start: int) -> tuple[str, int]:
    quote, out, i = text[start], [], start + 1
    while i < len(text):
        c = text[i]
        if c == quote:
            return "".join(out), i + 1
        if c == "\\":
            if text[i + 1:i + 2] not in ("\\", "'", '"'):
                raise _fail(text, "only the escapes \\\\, \\' and \\\" are allowed in strings", i)
            c, i = text[i + 1], i + 1
        out.append(c)
        i += 1
    raise _fail(text, "unterminated string", start)


def _tokenize(text: str) -> list[_Token]:
    tokens, i = [], 0
    while i < len(text):
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "'\"":
            value, end = _scan_string(text, i)
            tokens.append(_Token("str", value, i))
            i = end
        elif c == "`":
            end = text.find("`", i + 1)
            if end < 0:
                raise _fail(text, "unterminated backticked name", i)
            if not text[i + 1:end].strip():
                raise _fail(text, "empty backticked name", i)
            _check_name(text, text[i + 1:end], i)
            tokens.append(_Token("name", text[i + 1:end], i))
            i = end + 1
        elif m := _NUMBER.match(text, i):
            word, i = m.group(), m.end()
            if i < len(text) and (text[i].isalnum() or text[i] in "._"):
                raise _fail(text, f"malformed number {text[m.start():i + 1]!r}", m.start())
            value = float(word) if any(ch in word for ch in ".eE") else int(word)
            if isinstance(value, int) and value >= 2**63:
                raise _fail(text, f"the integer {word} is too large", m.start())
            tokens.append(_Token("num", value, m.start()))
        elif m := _NAME.match(text, i):
            word = m.group()
            if word not in _KEYWORDS:
                _check_name(text, word, i)
            tokens.append(_Token("kw" if word in _KEYWORDS else "name", word, i))
            i = m.end()
        elif op := next((o for o in _OPS if text.startswith(o, i)), None):
            tokens.append(_Token("op", op, i))
            i += len(op)
        else:
            problem = next((msg for sym, msg in _REFUSED if text.startswith(sym, i)), None)
            raise _fail(text, problem or f"unexpected character {c!r}", i)
    tokens.append(_Token("end", None, len(text)))
    return tokens


def _describe(tok: _Token) -> str:
    if tok.kind == "end":
        return "the end of the query"
    return f"string {tok.value!r}" if tok.kind == "str" else f"'{tok.value}'"


class _Parser:
    """Recursive descent over the token list; one method per grammar rule."""

    def __init__(self, text: str):
        if len(text) > MAX_QUERY_CHARS:
            raise _fail(text, f"the query is {len(text)} characters long, more than the limit of {MAX_QUERY_CHARS}")
        self.text, self.tokens, self.i, self.depth, self.comparisons = text, _tokenize(text), 0, 0, 0

    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def take(self) -> _Token:
        tok = self.peek()
        self.i = min(self.i + 1, len(self.tokens) - 1)
        return tok

    def at(self, *values: str, ahead: int = 0) -> bool:
        tok = self.peek(ahead)
        return tok.kind in ("op", "kw") and tok.value in values

    def fail(self, problem: str, tok: _Token) -> QueryError:
        return _fail(self.text, problem, tok.pos)

    def condition(self, node: Node, tok: _Token) -> Node:
        if isinstance(node, ListLiteral) or (isinstance(node, Literal) and not isinstance(node.value, bool)):
            shown = "a list" if isinstance(node, ListLiteral) else f"the value {node.value!r}"
            raise self.fail(f"{shown} is not a condition", tok)
        return node

    def whole_query(self) -> Node:
        if self.peek().kind == "end":
            raise _fail(self.text, "the query is empty")
        start, node = self.peek(), self.or_()
        if self.peek().kind != "end":
            raise self.fail(f"unexpected {_describe(self.peek())} after a complete condition", self.peek())
        return self.condition(node, start)

    def chain(self, cls: type, sub, words: tuple[str, ...]) -> Node:
        start, parts = self.peek(), [sub()]
        while self.at(*words):
            self.take()
            tok = self.peek()
            parts.append(self.condition(sub(), tok))
        if len(parts) == 1:
            return parts[0]
        self.condition(parts[0], start)
        return cls(tuple(parts))

    def or_(self) -> Node:
        return self.chain(Or, self.and_, ("or", "|"))

    def and_(self) -> Node:
        return self.chain(And, self.not_, ("and", "&"))

    def not_(self) -> Node:
        count = 0
        while self.at("not", "~"):
            self.take()
            count += 1
        start, node = self.peek(), self.comparison()
        if count:
            self.condition(node, start)
        return Not(node) if count % 2 else node

    def compare_op(self) -> _Token | None:
        if self.at(*_COMPARE_OPS, "in"):
            return self.take()
        if self.at("not") and self.at("in", ahead=1):
            tok = self.take()
            self.take()
            return _Token("kw", "not in", tok.pos)
        return None

    def comparison(self) -> Node:
        operands, pairs = [self.operand()], []
        while (op := self.compare_op()) is not None:
            operands.append(self.operand())
            left, right = operands[-2:]
            if op.value in ("in", "not in") and not isinstance(right, ListLiteral):
                raise self.fail(f"the right side of '{op.value}' must be a list", op)
            if op.value in ("in", "not in", *_ORDER) and isinstance(left, ListLiteral):
                raise self.fail(f"a list cannot be the left side of '{op.value}'", op)
            if op.value in _ORDER and isinstance(right, ListLiteral):
                raise self.fail(f"'{op.value}' cannot compare with a list", op)
            pairs.append(Compare(str(op.value), left, right))
            self.comparisons += 1
            if self.comparisons > MAX_QUERY_COMPARISONS:  # each costs a pass over the table when evaluated
                raise self.fail(f"the query makes more than {MAX_QUERY_COMPARISONS} comparisons, the limit", op)
        if not pairs:
            return operands[0]
        return pairs[0] if len(pairs) == 1 else And(tuple(pairs))

    def operand(self) -> Node:
        minus = []
        while self.at("-"):
            minus.append(self.take())
        node, nxt = self.atom(), self.peek()
        if self.at("("):
            raise self.fail("function calls are not allowed", nxt)
        if self.at("["):
            raise self.fail("subscripts are not allowed", nxt)
        if self.at("-"):
            raise self.fail("arithmetic is not allowed", nxt)
        if minus:
            if not (isinstance(node, Literal) and type(node.value) in (int, float)):
                raise self.fail("a minus sign is allowed only before a number", minus[0])
            if len(minus) % 2:
                node = Literal(-node.value)
        return node

    def atom(self) -> Node:
        tok = self.take()
        if tok.kind in ("num", "str"):
            return Literal(tok.value)
        if tok.kind == "name":
            return Column(str(tok.value))
        if tok.kind == "kw" and tok.value in ("True", "False"):
            return Literal(tok.value == "True")
        if tok.kind == "op" and tok.value == "(":
            self.depth += 1
            if self.depth > _MAX_DEPTH:
                raise self.fail("parentheses are nested too deeply", tok)
            node = self.or_()
            if self.at(","):
                raise self.fail("tuples are not allowed; write a list in square brackets", self.peek())
            if not self.at(")"):
                raise self.fail(f"expected ')' but found {_describe(self.peek())}", self.peek())
            self.take()
            self.depth -= 1
            return node
        if tok.kind == "op" and tok.value == "[":
            return self.list_()
        raise self.fail(f"expected a value but found {_describe(tok)}", tok)

    def list_(self) -> ListLiteral:
        values = []
        while not self.at("]"):
            start = self.peek()
            item = None if self.at("[") else self.operand()
            if not isinstance(item, Literal):
                raise self.fail("lists may contain only strings, numbers, True and False", start)
            values.append(item.value)
            if not self.at(","):
                break
            self.take()
        if not self.at("]"):
            raise self.fail(f"expected ']' but found {_describe(self.peek())}", self.peek())
        self.take()
        return ListLiteral(tuple(values))


def parse(text: str) -> Node:
    """Parse a query into a tree, in time linear in its length; raise QueryError for anything outside
    the grammar or over the limits (``MAX_QUERY_CHARS``, ``MAX_QUERY_COMPARISONS``)."""
    return _Parser(text).whole_query()


def check(texts: Iterable[str | None]) -> None:
    """Parse every given query now (an options object checks its queries so), so that a bad or oversized
    one stops a run before it is planned rather than after its trials are scored."""
    for text in texts:
        if text is not None:
            parse(text)


def _names(node: Node) -> Iterator[str]:
    if isinstance(node, Column):
        yield node.name
    elif isinstance(node, Compare):
        yield from _names(node.left)
        yield from _names(node.right)
    elif isinstance(node, Not):
        yield from _names(node.operand)
    elif isinstance(node, (And, Or)):
        for part in node.operands:
            yield from _names(part)


def column_names(node: Node) -> set[str]:
    """The column names a parsed query refers to."""
    return set(_names(node))


def _bools(result: pd.Series) -> np.ndarray:
    return result.to_numpy(dtype=bool, na_value=False)


def _numbers(value: object, n: int) -> np.ndarray | None:
    import numpy as np
    import pandas as pd

    if isinstance(value, pd.Series):
        return pd.to_numeric(value, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return None if isinstance(value, str) else np.full(n, float(value))


def _strings(value: object, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    import numpy as np
    import pandas as pd

    if isinstance(value, str):
        return np.full(n, value, dtype=object), np.ones(n, dtype=bool)
    if not isinstance(value, pd.Series):
        return None
    cells = value.to_numpy(dtype=object)
    return cells, np.fromiter((isinstance(c, str) for c in cells), dtype=bool, count=n)


class _Evaluator:
    """Turns a tree into a boolean mask over the rows of one frame (``self.np``, ``self.pd``: numpy and pandas,
    imported when one is made)."""

    def __init__(self, frame: pd.DataFrame, text: str):
        import numpy as np
        import pandas as pd

        self.np, self.pd = np, pd
        self.frame, self.text, self.n = frame, text, len(frame)

    def column(self, name: str) -> pd.Series:
        pd = self.pd
        if name not in self.frame.columns:
            raise _fail(self.text, f"unknown column {name!r}")
        data = self.frame[name]
        if isinstance(data, pd.DataFrame):
            raise _fail(self.text, f"column {name!r} appears more than once")
        return data.reset_index(drop=True)

    def mask(self, node: Node) -> np.ndarray:
        if isinstance(node, (And, Or)):
            combine = self.np.logical_and if isinstance(node, And) else self.np.logical_or
            return combine.reduce([self.mask(part) for part in node.operands])
        if isinstance(node, Not):
            return ~self.mask(node.operand)
        if isinstance(node, Compare):
            return self.compare(node)
        if isinstance(node, Literal) and isinstance(node.value, bool):
            return self.np.full(self.n, node.value)
        if isinstance(node, Column):
            data = self.column(node.name)
            if self.pd.api.types.is_bool_dtype(data.dtype):
                return _bools(data)
            raise _fail(self.text, f"column {node.name!r} is not boolean; compare it with a value")
        raise _fail(self.text, f"{node!r} is not a condition")

    def value(self, node: Node) -> object:
        if isinstance(node, Column):
            return self.column(node.name)
        if isinstance(node, Literal):
            return node.value
        if isinstance(node, ListLiteral):
            return node.values
        return self.pd.Series(self.mask(node))

    def compare(self, node: Compare) -> np.ndarray:
        left, right = self.value(node.left), self.value(node.right)
        try:
            if node.op in _ORDER:
                return self.order(_ORDER[node.op], left, right)
            hit = self.equal(left, right)
        except (TypeError, ValueError) as exc:
            raise _fail(self.text, f"cannot evaluate {node.op!r} on these values ({exc})") from None
        return ~hit if node.op in ("!=", "not in") else hit

    def equal(self, left: object, right: object) -> np.ndarray:
        pd = self.pd
        if isinstance(right, pd.Series) or (isinstance(left, tuple) and not isinstance(right, tuple)):
            left, right = right, left
        if isinstance(left, pd.Series):
            return _bools(left.isin(list(right)) if isinstance(right, tuple) else left.eq(right))
        hit = left in right if isinstance(right, tuple) and not isinstance(left, tuple) else left == right
        return self.np.full(self.n, bool(hit))

    def order(self, fn, left: object, right: object) -> np.ndarray:
        if not isinstance(left, self.pd.Series) and not isinstance(right, self.pd.Series):
            same_kind = isinstance(left, str) == isinstance(right, str)
            return self.np.full(self.n, bool(same_kind and fn(left, right)))
        result, numeric = self.np.zeros(self.n, dtype=bool), self.np.zeros(self.n, dtype=bool)
        lnum, rnum = _numbers(left, self.n), _numbers(right, self.n)
        if lnum is not None and rnum is not None:
            numeric = ~self.np.isnan(lnum) & ~self.np.isnan(rnum)
            with self.np.errstate(invalid="ignore"):
                result = fn(lnum, rnum) & numeric
        lstr, rstr = _strings(left, self.n), _strings(right, self.n)
        if lstr is not None and rstr is not None:
            both = lstr[1] & rstr[1] & ~numeric
            result[both] = self.np.asarray(fn(lstr[0][both], rstr[0][both]), dtype=bool)
        return result


def evaluate(node: Node, frame: pd.DataFrame, *, text: str = "") -> np.ndarray:
    """Boolean mask (numpy, one entry per row of frame) of the rows the query selects."""
    evaluator = _Evaluator(frame, text)
    for name in _names(node):
        evaluator.column(name)
    return evaluator.mask(node)


class _Undecided(Exception):
    """``evaluate_text`` leaves this query to ``evaluate``."""


class _TextEvaluator:
    """``_Evaluator``'s answers for string columns and string values, in plain Python."""

    def __init__(self, columns: Mapping[str, Sequence[str]], n: int):
        self.columns, self.n = columns, n

    def mask(self, node: Node) -> list[bool]:
        if isinstance(node, (And, Or)):
            combine = all if isinstance(node, And) else any
            return [combine(row) for row in zip(*(self.mask(part) for part in node.operands))]
        if isinstance(node, Not):
            return [not hit for hit in self.mask(node.operand)]
        if isinstance(node, Literal) and isinstance(node.value, bool):
            return [node.value] * self.n
        if isinstance(node, Compare) and node.op in ("==", "!=", "in", "not in"):
            hit = self.equal(self.value(node.left), self.value(node.right))
            return [not h for h in hit] if node.op in ("!=", "not in") else hit
        raise _Undecided  # an ordering (numbers coerced from text), a bare column, a column that is not text

    def value(self, node: Node) -> Sequence[str] | str | tuple[str, ...]:
        """A column's cells (a list), a string, or a tuple of strings: where equality is string equality."""
        if isinstance(node, Column) and node.name in self.columns:
            return list(self.columns[node.name])
        if isinstance(node, Literal) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ListLiteral) and all(isinstance(v, str) for v in node.values):
            return node.values
        raise _Undecided

    def equal(self, left, right) -> list[bool]:
        if isinstance(right, list) or (isinstance(left, tuple) and not isinstance(right, tuple)):
            left, right = right, left
        if isinstance(left, list) and isinstance(right, tuple):
            members = set(right)
            return [cell in members for cell in left]
        if isinstance(left, list):
            return [a == b for a, b in zip(left, right)] if isinstance(right, list) else [a == right for a in left]
        hit = left in right if isinstance(right, tuple) and not isinstance(left, tuple) else left == right
        return [hit] * self.n


def evaluate_text(node: Node, columns: Mapping[str, Sequence[str]], n: int) -> list[bool] | None:
    """``evaluate``'s mask for a table of ``n`` rows whose columns pandas reads as exactly these strings
    (``formats.tables.reads_as_text``), or None when the query is not one decided here: an ordering, a bare
    column, a number or boolean compared, a column not given. The caller then evaluates on the frame,
    which answers or raises the query's error."""
    try:
        return _TextEvaluator(columns, n).mask(node)
    except _Undecided:
        return None


def select(frame: pd.DataFrame, text: str) -> np.ndarray:
    """Parse text and evaluate it on frame; QueryError for a bad query or unknown column."""
    return evaluate(parse(text), frame, text=text)


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def render(node: Node) -> str:
    """Query text for a node, compact like MediScore's partition labels (``300<=ProbeWidth``)."""
    if isinstance(node, Literal):
        return repr(node.value)
    if isinstance(node, ListLiteral):
        return "[" + ",".join(repr(v) for v in node.values) + "]"
    if isinstance(node, Column):
        return node.name if _IDENTIFIER.match(node.name) else f"`{node.name}`"
    if isinstance(node, Compare):
        op = f" {node.op} " if node.op in ("in", "not in") else node.op
        return f"{render(node.left)}{op}{render(node.right)}"
    if isinstance(node, Not):
        return f"not ({render(node.operand)})"
    joiner = " and " if isinstance(node, And) else " or "
    return "(" + joiner.join(render(o) for o in node.operands) + ")"


def conjuncts(node: Node) -> tuple[Node, ...]:
    """The terms of a top-level conjunction (a single term otherwise)."""
    return node.operands if isinstance(node, And) else (node,)


def factor(node: Node) -> tuple[str, tuple[Scalar, ...]] | None:
    """``(column, values)`` if the term is ``Column == [values]`` (or ``in``), else None."""
    if (isinstance(node, Compare) and node.op in ("==", "in") and isinstance(node.left, Column)
            and isinstance(node.right, ListLiteral)):
        return node.left.name, node.right.values
    return None




@dataclass(frozen=True)
class PartitionTerm:
    """One term of a ``-qp`` partition: a factor's value (``Name==v``) or a condition kept in every partition."""

    name: str        # the column it is about
    cell: str        # its cell in a partition table: repr(value), or the condition's text
    condition: str   # the query text that selects it
    is_factor: bool


def partitions(text: str) -> list[tuple[PartitionTerm, ...]]:
    """``-qp``: one partition per combination of the listed factor values, each with the query's other
    terms as conditions, in the query's term order (docs/detection.md §7.3, docs/masks.md §8)."""
    choices = []
    for term in conjuncts(parse(text)):
        as_factor = factor(term)
        if as_factor is None:
            names = sorted(column_names(term))
            if not names:
                raise QueryError(f"partition query {text!r}: the term {render(term)!r} names no column")
            condition = render(term)
            choices.append([PartitionTerm(names[0], condition, condition, False)])
        else:
            name, values = as_factor
            choices.append([PartitionTerm(name, repr(v), f"{name}=={v!r}", True) for v in values])
    return list(itertools.product(*choices))


__all__ += ["render", "conjuncts", "factor", "PartitionTerm", "partitions"]
