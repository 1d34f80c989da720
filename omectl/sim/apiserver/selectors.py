"""Label and field selectors: parse them as k8s.io/apimachinery does and match objects against them cheaply.

Label selectors follow `pkg/labels` (lexer, parser, requirement validation and error texts); field selectors
follow `pkg/fields` (comma-separated terms, `=`/`==`/`!=`, backslash escaping). A selector is compiled once
into plain closures, because matching runs per object, per watcher, per event.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = [
    "EVERYTHING",
    "FieldSelector",
    "LabelSelector",
    "Requirement",
    "SelectorError",
    "label_selector_from_object",
    "parse_field_selector",
    "parse_label_selector",
]


class SelectorError(ValueError):
    """A selector that does not parse or validate; the HTTP layer answers 400 BadRequest with its message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --- validation texts (k8s.io/apimachinery/pkg/util/validation) ----------------------------------------

_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_RE = re.compile(f"^{_QNAME_FMT}$")
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN_FMT = _DNS_LABEL_FMT + "(\\." + _DNS_LABEL_FMT + ")*"
_DNS_SUBDOMAIN_RE = re.compile(f"^{_DNS_SUBDOMAIN_FMT}$")
_DNS_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT = f"({_QNAME_FMT})?"
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE_FMT}$")
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character"
)
_INT64_RE = re.compile(r"^[+-]?[0-9]+$")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    # Mirrors Go's RegexError, including its doubled space between examples.
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    text = msg + " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            text += " or "
        text += f"'{example}', "
    return text + f"regex used for validation is '{fmt}')"


def _qualified_name_errors(value: str) -> list[str]:
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 characters")
            if not _DNS_SUBDOMAIN_RE.match(prefix):
                errs.append("prefix part " + _regex_error(_DNS_SUBDOMAIN_MSG, _DNS_SUBDOMAIN_FMT, "example.com"))
    else:
        return [
            "a qualified name "
            + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QNAME_RE.match(name):
        errs.append("name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def _label_value_errors(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE_RE.match(value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _go_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _go_string_slice(values: list[str] | None) -> str:
    """`%#v` of a Go []string."""
    if values is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(_go_quote(v) for v in values) + "}"


def _parse_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64), or None when Go would fail."""
    if not _INT64_RE.match(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


# --- requirements ------------------------------------------------------------------------------------------

# selection.Operator values, as Go spells them.
OP_IN, OP_NOT_IN, OP_EQUALS, OP_DOUBLE_EQUALS, OP_NOT_EQUALS = "in", "notin", "=", "==", "!="
OP_EXISTS, OP_DOES_NOT_EXIST, OP_GT, OP_LT = "exists", "!", "gt", "lt"
_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"

LabelCheck = Callable[[Mapping[str, str]], bool]


class Requirement:
    """One validated label requirement (`labels.Requirement`), compiled into a check."""

    __slots__ = ("check", "key", "operator", "values")

    def __init__(self, key: str, operator: str, values: tuple[str, ...], check: LabelCheck) -> None:
        self.key = key
        self.operator = operator
        self.values = values
        self.check = check

    def __repr__(self) -> str:
        return f"Requirement({self.key!r}, {self.operator!r}, {self.values!r})"

    def __str__(self) -> str:
        if self.operator == OP_EXISTS:
            return self.key
        if self.operator == OP_DOES_NOT_EXIST:
            return "!" + self.key
        if self.operator in (OP_IN, OP_NOT_IN):
            return f"{self.key} {self.operator} ({','.join(self.values)})"
        symbol = {OP_GT: ">", OP_LT: "<"}.get(self.operator, self.operator)
        return f"{self.key}{symbol}{self.values[0]}"


def _compile(key: str, operator: str, values: tuple[str, ...]) -> LabelCheck:
    if operator == OP_EXISTS:
        return lambda labels: key in labels
    if operator == OP_DOES_NOT_EXIST:
        return lambda labels: key not in labels
    if operator in (OP_GT, OP_LT):
        bound = _parse_int64(values[0])
        greater = operator == OP_GT

        def compare(labels: Mapping[str, str]) -> bool:
            raw = labels.get(key)
            if raw is None or bound is None:
                return False
            number = _parse_int64(raw)
            if number is None:
                return False
            return number > bound if greater else number < bound

        return compare
    # A label value is always a string, so `.get()` returning None never equals or belongs to the values;
    # that gives the "absent key matches != and notin" rule for free.
    if len(values) == 1:
        wanted = values[0]
        if operator in (OP_NOT_EQUALS, OP_NOT_IN):
            return lambda labels: labels.get(key) != wanted
        return lambda labels: labels.get(key) == wanted
    members = frozenset(values)
    if operator == OP_NOT_IN:
        return lambda labels: labels.get(key) not in members
    return lambda labels: labels.get(key) in members


def _field_invalid(path: str, shown_value: str, detail: str) -> str:
    return f"{path}: Invalid value: {shown_value}: {detail}"


def new_requirement(key: str, operator: str, values: list[str] | None, path: str = "") -> Requirement:
    """Validate and compile one requirement, like `labels.NewRequirement` (messages included).

    `path` is the field path prefix (Go's `field.Path`); empty means none, which Go prints as nothing before
    `key`/`values`.
    """
    prefix = f"{path}." if path else ""
    errs: list[str] = []
    key_errs = _qualified_name_errors(key)
    if key_errs:
        errs.append(_field_invalid(prefix + "key", _go_quote(key), "; ".join(key_errs)))
    vals = list(values) if values is not None else []
    values_path = prefix + "values"
    if operator in (OP_IN, OP_NOT_IN):
        if not vals:
            errs.append(
                _field_invalid(
                    values_path, _go_string_slice(values), "for 'in', 'notin' operators, values set can't be empty"
                )
            )
    elif operator in (OP_EQUALS, OP_DOUBLE_EQUALS, OP_NOT_EQUALS):
        if len(vals) != 1:
            errs.append(
                _field_invalid(
                    values_path, _go_string_slice(values), "exact-match compatibility requires one single value"
                )
            )
    elif operator in (OP_EXISTS, OP_DOES_NOT_EXIST):
        if vals:
            errs.append(
                _field_invalid(
                    values_path, _go_string_slice(values), "values set must be empty for exists and does not exist"
                )
            )
    elif operator in (OP_GT, OP_LT):
        if len(vals) != 1:
            errs.append(
                _field_invalid(
                    values_path,
                    _go_string_slice(values),
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                )
            )
        for i, value in enumerate(vals):
            if _parse_int64(value) is None:
                errs.append(
                    _field_invalid(
                        f"{values_path}[{i}]",
                        _go_quote(value),
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                )
    else:
        errs.append(f"{prefix}operator: Unsupported value: {_go_quote(operator)}")
    for i, value in enumerate(vals):
        value_errs = _label_value_errors(value)
        if value_errs:
            errs.append(_field_invalid(f"{values_path}[{i}][{key}]", _go_quote(value), "; ".join(value_errs)))
    if errs:
        raise SelectorError(errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")
    # Go keeps the values as a sorted set.
    unique = tuple(sorted(set(vals)))
    return Requirement(key, operator, unique, _compile(key, operator, unique))


_NO_LABELS: Mapping[str, str] = {}


class LabelSelector:
    """A conjunction of label requirements; the empty selector matches everything."""

    __slots__ = ("_checks", "_single", "requirements")

    def __init__(self, requirements: Iterable[Requirement] = ()) -> None:
        self.requirements: tuple[Requirement, ...] = tuple(sorted(requirements, key=lambda r: r.key))
        self._checks: tuple[LabelCheck, ...] = tuple(r.check for r in self.requirements)
        self._single: LabelCheck | None = self._checks[0] if len(self._checks) == 1 else None

    @property
    def empty(self) -> bool:
        return not self._checks

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if labels is None:
            labels = _NO_LABELS
        single = self._single
        if single is not None:
            return single(labels)
        for check in self._checks:  # noqa: SIM110 - a plain loop beats all() over a generator here
            if not check(labels):
                return False
        return True

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        return f"LabelSelector({str(self)!r})"


EVERYTHING = LabelSelector()


# --- label selector text (k8s.io/apimachinery/pkg/labels/selector.go) --------------------------------------

_T_END, _T_CLOSE, _T_COMMA, _T_NOT, _T_DEQ, _T_EQ, _T_GT, _T_ID, _T_IN, _T_LT, _T_NEQ, _T_NOTIN, _T_OPEN = range(13)
_TOKENS = {
    ")": _T_CLOSE,
    ",": _T_COMMA,
    "!": _T_NOT,
    "==": _T_DEQ,
    "=": _T_EQ,
    ">": _T_GT,
    "in": _T_IN,
    "<": _T_LT,
    "!=": _T_NEQ,
    "notin": _T_NOTIN,
    "(": _T_OPEN,
}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")


def _lex(text: str) -> list[tuple[int, str]]:
    items: list[tuple[int, str]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _WHITESPACE:
            i += 1
        if i >= n:
            items.append((_T_END, ""))
            return items
        if text[i] in _SPECIAL:
            # Longest run of special characters that still spells a token (every single one does).
            j = i + 1
            while j < n and text[j] in _SPECIAL and text[i : j + 1] in _TOKENS:
                j += 1
            items.append((_TOKENS[text[i:j]], text[i:j]))
            i = j
            continue
        j = i
        while j < n and text[j] not in _SPECIAL and text[j] not in _WHITESPACE:
            j += 1
        word = text[i:j]
        items.append((_TOKENS.get(word, _T_ID), word))
        i = j


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def lookahead(self, values_context: bool = True) -> tuple[int, str]:
        tok, lit = self.items[self.pos]
        if values_context and tok in (_T_IN, _T_NOTIN):
            tok = _T_ID
        return tok, lit

    def consume(self, values_context: bool = True) -> tuple[int, str]:
        item = self.lookahead(values_context)
        if self.pos < len(self.items) - 1:
            self.pos += 1
        return item

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            tok, lit = self.lookahead()
            if tok in (_T_ID, _T_NOT):
                try:
                    requirements.append(self.parse_requirement())
                except SelectorError as exc:
                    raise SelectorError(f"unable to parse requirement: {exc.message}") from None
                tok, lit = self.consume()
                if tok == _T_END:
                    return requirements
                if tok == _T_COMMA:
                    tok2, lit2 = self.lookahead()
                    if tok2 not in (_T_ID, _T_NOT):
                        raise SelectorError(f"found '{lit2}', expected: identifier after ','")
                    continue
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            if tok == _T_END:
                return requirements
            raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def parse_requirement(self) -> Requirement:
        operator = ""
        tok, lit = self.consume()
        if tok == _T_NOT:
            operator = OP_DOES_NOT_EXIST
            tok, lit = self.consume()
        if tok != _T_ID:
            raise SelectorError(f"found '{lit}', expected: identifier")
        key_errs = _qualified_name_errors(lit)
        if key_errs:
            # The parser validates the key with a nil field path, which Go prints as "<nil>".
            raise SelectorError(_field_invalid("<nil>", _go_quote(lit), "; ".join(key_errs)))
        key = lit
        if operator != OP_DOES_NOT_EXIST and self.lookahead()[0] in (_T_END, _T_COMMA):
            operator = OP_EXISTS
        if operator in (OP_EXISTS, OP_DOES_NOT_EXIST):
            return new_requirement(key, operator, [])
        operator = self.parse_operator()
        values = self.parse_values() if operator in (OP_IN, OP_NOT_IN) else self.parse_exact_value()
        return new_requirement(key, operator, values)

    def parse_operator(self) -> str:
        tok, lit = self.consume(values_context=False)
        operator = {
            _T_IN: OP_IN,
            _T_EQ: OP_EQUALS,
            _T_DEQ: OP_DOUBLE_EQUALS,
            _T_GT: OP_GT,
            _T_LT: OP_LT,
            _T_NOTIN: OP_NOT_IN,
            _T_NEQ: OP_NOT_EQUALS,
        }.get(tok)
        if operator is None:
            raise SelectorError(f"found '{lit}', expected: {_BINARY_OPERATORS}")
        return operator

    def parse_values(self) -> list[str]:
        tok, lit = self.consume()
        if tok != _T_OPEN:
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead()
        if tok in (_T_ID, _T_COMMA):
            values = self.parse_identifiers()
            if self.consume()[0] != _T_CLOSE:
                # Go reports the literal seen after '(' here, not the offending one.
                raise SelectorError(f"found '{lit}', expected: ')'")
            return values
        if tok == _T_CLOSE:
            self.consume()
            return [""]
        raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")

    def parse_identifiers(self) -> list[str]:
        values: set[str] = set()
        while True:
            tok, lit = self.consume()
            if tok == _T_ID:
                values.add(lit)
                tok2, lit2 = self.lookahead()
                if tok2 == _T_COMMA:
                    continue
                if tok2 == _T_CLOSE:
                    return sorted(values)
                raise SelectorError(f"found '{lit2}', expected: ',' or ')'")
            if tok == _T_COMMA:
                # "(,", ",," and ",)" each stand for the empty value.
                if not values:
                    values.add("")
                tok2 = self.lookahead()[0]
                if tok2 == _T_CLOSE:
                    values.add("")
                    return sorted(values)
                if tok2 == _T_COMMA:
                    self.consume()
                    values.add("")
                continue
            raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def parse_exact_value(self) -> list[str]:
        if self.lookahead()[0] in (_T_END, _T_COMMA):
            return [""]
        tok, lit = self.consume()
        if tok == _T_ID:
            return [lit]
        raise SelectorError(f"found '{lit}', expected: identifier")


def parse_label_selector(text: str) -> LabelSelector:
    """Parse a `labelSelector` query value; raises `SelectorError` with the real server's message."""
    if not text or text.isspace():
        return EVERYTHING
    return LabelSelector(_Parser(text).parse())


_SELECTOR_OPERATORS = {"In": OP_IN, "NotIn": OP_NOT_IN, "Exists": OP_EXISTS, "DoesNotExist": OP_DOES_NOT_EXIST}


def label_selector_from_object(selector: Mapping[str, Any] | None) -> LabelSelector:
    """Compile a metav1.LabelSelector (`matchLabels`, `matchExpressions`) like `LabelSelectorAsSelector`.

    None and `{}` match everything (the webhook rule for namespaceSelector/objectSelector).
    """
    if not selector:
        return EVERYTHING
    if not isinstance(selector, Mapping):
        raise SelectorError("label selector must be an object")
    match_labels = selector.get("matchLabels") or {}
    match_expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping) or not isinstance(match_expressions, list):
        raise SelectorError("matchLabels must be an object and matchExpressions a list")
    requirements: list[Requirement] = []
    for key, value in match_labels.items():
        if not isinstance(value, str):
            raise SelectorError(f"matchLabels[{key}] must be a string")
        requirements.append(new_requirement(str(key), OP_EQUALS, [value]))
    for expression in match_expressions:
        if not isinstance(expression, Mapping):
            raise SelectorError("matchExpressions items must be objects")
        operator = expression.get("operator")
        op = _SELECTOR_OPERATORS.get(operator) if isinstance(operator, str) else None
        if op is None:
            raise SelectorError(f"{_go_quote(str(operator or ''))} is not a valid label selector operator")
        raw_values = expression.get("values")
        if raw_values is not None and (
            not isinstance(raw_values, list) or not all(isinstance(v, str) for v in raw_values)
        ):
            raise SelectorError("matchExpressions values must be a list of strings")
        # Go copies with append([]string(nil), values...), so an empty list is a nil slice.
        values = list(raw_values) if raw_values else None
        key = expression.get("key")
        requirements.append(new_requirement(key if isinstance(key, str) else "", op, values))
    return LabelSelector(requirements)


# --- field selectors (k8s.io/apimachinery/pkg/fields/selector.go) -----------------------------------------

_FIELD_OPERATORS = ("!=", "==", "=")
FieldGetter = Callable[[Mapping[str, Any]], Any]


def _path_getter(path: tuple[str, ...]) -> FieldGetter:
    if len(path) == 1:
        (only,) = path
        return lambda obj: obj.get(only)
    if len(path) == 2:
        outer, inner = path

        def get_two(obj: Mapping[str, Any]) -> Any:
            node = obj.get(outer)
            return node.get(inner) if isinstance(node, dict) else None

        return get_two

    def get_deep(obj: Mapping[str, Any]) -> Any:
        node: Any = obj
        for part in path:
            if not isinstance(node, dict):
                return None
            node = node.get(part)
        return node

    return get_deep


def _field_getter(label: str) -> FieldGetter:
    plain = _path_getter(tuple(label.split(".")))
    if label != "source":
        return plain
    component = _path_getter(("source", "component"))
    # Core Events expose `source.component` under the field label `source`.
    return lambda obj: component(obj) if obj.get("kind") == "Event" else plain(obj)


def _split_terms(text: str) -> list[str]:
    terms: list[str] = []
    start = 0
    escaped = False
    for i, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    # No escaping in the label, so the first operator anywhere is the split point.
    for i in range(len(term)):
        for op in _FIELD_OPERATORS:
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def _unescape_value(value: str) -> str:
    if "\\" not in value and "," not in value and "=" not in value:
        return value
    out: list[str] = []
    escaped = False
    for char in value:
        if escaped:
            if char not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{char}")
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in ",=":
            # Go prints the rune with %v, i.e. as its code point number.
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(char)}")
        else:
            out.append(char)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _field_string(value: Any) -> str:
    if value is None or isinstance(value, dict | list):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


class FieldSelector:
    """A conjunction of field terms (`label=value`, `label!=value`); the empty selector matches everything."""

    __slots__ = ("_terms", "terms")

    def __init__(self, terms: Iterable[tuple[str, str, str]] = ()) -> None:
        self.terms: tuple[tuple[str, str, str], ...] = tuple(terms)  # (label, "=" | "!=", value)
        self._terms = tuple((_field_getter(label), op == "!=", value) for label, op, value in self.terms)

    @property
    def empty(self) -> bool:
        return not self._terms

    def requirement_for(self, label: str) -> str | None:
        """The value `label` must equal, when the selector has such a term (`metadata.name=x`)."""
        for term_label, op, value in self.terms:
            if term_label == label and op == "=":
                return value
        return None

    def matches(self, obj: Mapping[str, Any]) -> bool:
        for get, negated, wanted in self._terms:
            value = get(obj)
            text = value if type(value) is str else _field_string(value)
            if (text == wanted) is negated:
                return False
        return True

    def __str__(self) -> str:
        def escape(value: str) -> str:
            return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")

        return ",".join(f"{label}{op}{escape(value)}" for label, op, value in self.terms)

    def __repr__(self) -> str:
        return f"FieldSelector({str(self)!r})"


_NO_FIELDS = FieldSelector()


def parse_field_selector(text: str, supported: Iterable[str]) -> FieldSelector:
    """Parse a `fieldSelector` query value, allowing only the field labels in `supported`."""
    if not text:
        return _NO_FIELDS
    allowed = supported if isinstance(supported, set | frozenset) else set(supported)
    terms: list[tuple[str, str, str]] = []
    # Go sorts the raw terms before parsing them, which decides which bad term is reported first.
    for part in sorted(_split_terms(text)):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        label, op, raw_value = split
        terms.append((label, "!=" if op == "!=" else "=", _unescape_value(raw_value)))
    for label, _, _ in terms:
        if label not in allowed:
            raise SelectorError(f"field label not supported: {label}")
    return FieldSelector(terms) if terms else _NO_FIELDS
