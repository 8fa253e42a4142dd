"""Integer constant expressions and overrides: what sizes, counts, bindings and the
workgroup size evaluate to, with the caller's override values applied.

The evaluator takes integer literals, names of module-scope consts and overrides,
``+ - * /`` and parentheses (division truncating toward zero, as WGSL's), by operator
precedence with explicit stacks, so no depth of an expression recurses. A declaration is
resolved on demand: a computation that needs one not resolved yet raises ``_Need``, and
``resolve`` resolves that first and retries, so a chain of thousands of declarations
grows a list, not Python's stack, and a cycle is found (and named) as a repeat.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar, cast

from ..errors import ShaderError
from .parser import _Attr, _cycle, _Decl, _Declarations, _text
from .tokens import _error, _Located, _Source, _Tok, _unplaced

_INT_RE = re.compile(r"(0[xX][0-9a-fA-F]+|\d+)([iu]?)$")
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "neg": 3}

T = TypeVar("T")

# What the resolver computes and memoises: ("value", name) the integer value of a const
# or override, ("struct" | "alias", name) a layout (layout.py); the flag is whether the
# layout is for a buffer (host-shareable: no bool) or for workgroup memory.
_Key = tuple[str, str, bool]


#: the values each scalar type of an override holds (bool takes any)
_RANGES: dict[str, tuple[float, float]] = {
    "u32": (0, 0xFFFFFFFF),
    "i32": (-(2**31), 2**31 - 1),
    "f32": (-3.4028234663852886e38, 3.4028234663852886e38),
    "f16": (-65504.0, 65504.0),
}


class _Unresolved(Exception):
    """An override with no value in ``constants`` and no default was needed; callers turn
    this into a ShaderError that names what needed it."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class _Need(Exception):
    """Raised where a computation needs a declaration not resolved yet. ``resolve``
    resolves that first and retries, so a chain of declarations (a const defined by the
    one before, a struct holding the one before) grows a list, not Python's stack."""

    def __init__(self, key: _Key, where: _Located) -> None:
        super().__init__(key)
        self.key = key
        self.where = where  # what needs it, for the message if it turns out a cycle


def _int_literal(tok: _Tok) -> int | None:
    text = tok.text
    if text.isdecimal():  # the common case: `\d+`
        return int(text)
    match = _INT_RE.match(text)  # only a number starts with a digit
    if match is None:
        return None
    body = match.group(1)
    return int(body, 16) if body[:2] in ("0x", "0X") else int(body)


def _literal_type(text: str) -> str:
    """The concrete type of a literal; an AbstractInt becomes i32, an AbstractFloat f32."""
    match = _INT_RE.match(text)
    if match is not None:
        return "u32" if match.group(2) == "u" else "i32"
    return "f16" if text.endswith("h") else "f32"  # `h` is no hex digit: always a suffix


class _Constants(_Declarations):
    """A module's declarations, with its override values, the resolver and the evaluator."""

    def __init__(self, src: _Source) -> None:
        super().__init__(src)
        self.values: dict[str, float | int | bool] = {}  # override name -> value from constants
        self.value_keys: dict[str, str] = {}  # override name -> the constants key that set it
        self._memo: dict[_Key, object] = {}
        self._types: dict[str, str] = {}  # const or override name -> its scalar type

    # -- resolution

    def resolve(self, compute: Callable[[], T]) -> T:
        """``compute()``, after resolving every declaration it needs (see _Need). Only
        public entry points call this; what they call raises _Need instead."""
        pending: list[_Key] = []
        waiting: set[_Key] = set()  # pending, as a set: a chain can be thousands long
        while True:
            try:
                if not pending:
                    return compute()
                key = pending[-1]
                try:
                    self._memo[key] = self._resolve(key)
                except _Unresolved as e:  # raised again where the value is used, which says why
                    self._memo[key] = e
                waiting.discard(pending.pop())
            except _Need as need:
                if need.key in waiting:
                    raise _cycle(need.key[1], need.where) from None
                pending.append(need.key)
                waiting.add(need.key)

    def _resolved(self, kind: str, name: str, where: _Located, shareable: bool = True) -> object:
        key = (kind, name, shareable)
        if key not in self._memo:
            raise _Need(key, where)
        return self._memo[key]

    def _resolve(self, key: _Key) -> object:
        """The value of ``("value", name, _)``; layout.py resolves the layouts."""
        name = key[1]
        if name in self.values:
            value = self.values[name]
            if isinstance(value, bool) or not float(value).is_integer():
                raise _error(
                    self.overrides[name],
                    f"constants[{self.value_keys[name]!r}] = {value!r} sets override `{name}`"
                    " (declared here), which is used as an integer",
                    "pass an integer.",
                )
            return int(value)
        decl = self.consts.get(name) or self.overrides[name]
        if decl.init is None:
            raise _Unresolved(name)
        return self._eval(decl.init, decl)

    # -- constant expressions

    def _eval(self, toks: Sequence[_Tok], where: _Located) -> int:
        """Evaluate integer literals, const/override names, + - * / and parentheses, by
        operator precedence with explicit stacks (no recursion, however deep)."""
        if len(toks) == 1 and (literal := _int_literal(toks[0])) is not None:
            return literal  # the common case: @binding(0), @workgroup_size(64)

        def bad() -> ShaderError:
            return _error(
                toks[0] if toks else where,
                f"`{_text(toks)}` is not an integer expression vyre_native can evaluate (it takes"
                " integer literals, names of module-scope consts and overrides, + - * / and"
                " parentheses)",
                "write it in those terms.",
            )

        values: list[int] = []
        ops: list[str] = []  # "(", "neg" or a binary operator

        def apply(op: str) -> None:
            if op == "neg":
                values.append(-values.pop())
                return
            right, left = values.pop(), values.pop()
            if op == "+":
                values.append(left + right)
            elif op == "-":
                values.append(left - right)
            elif op == "*":
                values.append(left * right)
            elif right == 0:
                raise bad()
            else:
                quotient = abs(left) // abs(right)  # WGSL truncates toward zero
                values.append(quotient if (left < 0) == (right < 0) else -quotient)

        operand = True  # whether an operand (or a prefix) comes next
        for i, tok in enumerate(toks):
            if operand:
                literal = _int_literal(tok)
                if tok.text == "-" and tok.kind == "punct":
                    ops.append("neg")
                elif tok.text == "(":
                    ops.append("(")
                elif literal is not None:
                    values.append(literal)
                    operand = False
                elif tok.kind == "ident" and (i + 1 == len(toks) or toks[i + 1].text != "("):
                    values.append(self._value(tok))  # calls such as min(a, b) are not evaluated
                    operand = False
                else:
                    raise bad()
            elif tok.text in ("+", "-", "*", "/"):
                while ops and ops[-1] != "(" and _PRECEDENCE[ops[-1]] >= _PRECEDENCE[tok.text]:
                    apply(ops.pop())
                ops.append(tok.text)
                operand = True
            elif tok.text == ")":
                while ops and ops[-1] != "(":
                    apply(ops.pop())
                if not ops:
                    raise bad()
                ops.pop()
            else:
                raise bad()
        if operand:
            raise bad()
        while ops:
            op = ops.pop()
            if op == "(":
                raise bad()
            apply(op)
        return values[0]

    def _value(self, tok: _Tok) -> int:
        name = tok.text
        if name not in self.consts and name not in self.overrides:
            raise _error(
                tok,
                f"`{name}` in a constant expression is not a module-scope const or override",
                f"declare it, e.g. `const {name} = 64;`.",
            )
        value = self._resolved("value", name, tok)
        if isinstance(value, _Unresolved):
            raise _Unresolved(value.name)
        return cast(int, value)

    def eval_int(self, toks: Sequence[_Tok], where: _Located, what: str) -> int:
        try:
            return self._eval(toks, where)
        except _Unresolved as e:
            key = self.webgpu_key(e.name)
            named = f"{{'{key}': ...}}" + (f" (or {{'{e.name}': ...}})" if key != e.name else "")
            raise _error(
                where,
                f"{what} depends on override `{e.name}`, which has no default and no value in constants",
                f"pass constants={named}, or give the override a default.",
            ) from None

    def attr_int(self, attr: _Attr, name: str) -> int:
        args = attr.args
        if len(args) == 1 and len(args[0]) == 1 and (literal := _int_literal(args[0][0])) is not None:
            return literal  # the common case: @binding(0)
        if len(args) != 1:
            raise _error(attr, f"@{name} takes one argument, got {len(attr.args)}", f"write @{name}(n).")
        return self.eval_int(attr.args[0], attr, f"@{name}")

    # -- overrides

    def override_id(self, name: str) -> int | None:
        """The @id of an override, if it has one (resolved: it may be a const expression)."""
        attr = self.overrides[name].attrs.get("id")
        return None if attr is None else self.resolve(lambda: self.attr_int(attr, "id"))

    def webgpu_key(self, name: str) -> str:
        """The key WebGPU (and wgpu-native) sets an override by: its @id as a decimal
        string when it has one, else its name."""
        ident = self.override_id(name)
        return name if ident is None else str(ident)

    def set_constants(self, constants: Mapping[str, float | int | bool]) -> dict[str, float | int | bool]:
        """Take the caller's values, keyed by an override's name or, for an @id override,
        by its id as a decimal string (WebGPU's key); return them under WebGPU's keys."""
        by_id = {self.webgpu_key(n): n for n in self.overrides}
        for key, value in constants.items():
            name = key if key in self.overrides else by_id.get(key)
            if name is None:
                known = ", ".join(
                    f"`{n}`" + (f" (@id({k}): also '{k}')" if k != n else "") for k, n in by_id.items()
                )
                what = "" if isinstance(key, str) else f" (a {type(key).__name__}; keys are str)"
                declare = f"@id({key}) override x: u32;" if str(key).isdigit() else f"override {key}: u32;"
                raise _unplaced(
                    f"constants names `{key}`{what}, which is no override declared in the module;"
                    f" its overrides are {known or 'none'}",
                    "it is about the constants argument, a name the WGSL lacks",
                    f"remove `{key}` from constants, or declare `{declare}` (or f32, i32, bool);"
                    " an @id(n) override is set by its name or by 'n'.",
                )
            if name in self.values:
                raise _unplaced(
                    f"constants sets override `{name}` twice, as {self.value_keys[name]!r} and {key!r}",
                    "it is about the constants argument",
                    "keep one of them.",
                )
            self._check_range(name, value)
            self.values[name], self.value_keys[name] = value, key
        return {self.webgpu_key(name): value for name, value in self.values.items()}

    def _check_range(self, name: str, value: float | int | bool) -> None:
        """Refuse a value outside override ``name``'s type (wgpu-native refuses it at
        pipeline creation, "Source f64 value doesn't fit", naming neither)."""
        decl = self.overrides[name]
        kind = self.scalar_type(decl, name)
        bounds = _RANGES.get(kind)
        if bounds is None or isinstance(value, bool) or bounds[0] <= value <= bounds[1]:
            return
        low, high = bounds
        spans = f"{low:.9g} to {high:.9g}" if kind in ("f32", "f16") else f"{low} to {high}"
        raise _error(
            decl,
            f"constants gives override `{name}` the value {value!r}, outside its type {kind} ({spans})",
            f"pass a value in {kind}'s range for `{name}`, or declare it of a wider type.",
        )

    def scalar_type(self, decl: _Decl, name: str) -> str:
        """An override's type: declared, else that of the first literal, conversion or
        const/override name in its initializer (followed iteratively, and remembered for
        every name on the way)."""
        path: dict[str, None] = {name: None}  # insertion-ordered set
        while (found := self._types.get(name)) is None:
            found, follow = self._own_type(decl, name)
            if found is not None:
                break
            name, decl = follow
            if name in path:
                raise _cycle(name, decl)
            path[name] = None
        self._types.update(dict.fromkeys(path, found))
        return found

    def _own_type(self, decl: _Decl, name: str) -> tuple[str | None, tuple[str, _Decl]]:
        """(type, _) when ``decl`` tells its type itself, else (None, the const or override
        its type comes from)."""
        if decl.type is not None:
            return self._unalias(decl.type).name, (name, decl)
        for tok in decl.init or ():
            if tok.text in ("f32", "f16", "i32", "u32", "bool"):
                return tok.text, (name, decl)
            if tok.text in ("true", "false"):
                return "bool", (name, decl)
            if tok.kind == "num":
                return _literal_type(tok.text), (name, decl)
            other = self.consts.get(tok.text) or self.overrides.get(tok.text)
            if other is not None:
                return None, (tok.text, other)
        raise _error(decl, f"cannot tell the type of `{name}`", f"declare it, e.g. `override {name}: u32 = ...;`.")
