"""A compute entry point of a module: its stage, its workgroup size, the module-scope
names it uses (through the functions it calls), and the buffer bindings among them."""

from __future__ import annotations

from .._lib import lib
from .layout import _Layouts
from .parser import _Fn, _Var
from .tokens import _error, _unplaced

# The binding kinds, Python's one account of them: each kind's name (Binding.kind) with
# C's code for it (vn_binding_kind in csrc/include/vn_pipeline.h, read from the library), and the
# (address space, access mode) each is declared with.
_KIND_CODES: dict[str, int] = {
    "storage_read": lib.VN_BINDING_STORAGE_READ,
    "storage_read_write": lib.VN_BINDING_STORAGE_READ_WRITE,
    "uniform": lib.VN_BINDING_UNIFORM,
}
_BINDING_KINDS = {
    ("uniform", None): "uniform",
    ("storage", None): "storage_read",
    ("storage", "read"): "storage_read",
    ("storage", "read_write"): "storage_read_write",
}


def _listing(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


class _Module(_Layouts):
    """A parsed module, what reflect() reads of an entry point."""

    def entry(self, name: str) -> _Fn:
        fn = self.fns.get(name)
        if fn is not None and "compute" in fn.attrs and not {"vertex", "fragment"} & fn.attrs.keys():
            return fn
        computes = [n for n, f in self.fns.items() if "compute" in f.attrs]
        if fn is None:
            raise _unplaced(
                f"entry point `{name}` not found: the module has no fn of that name; its"
                f" compute entry points are {_listing(computes)}",
                "it is about the entry_point argument, a name the WGSL lacks",
                f"pass entry_point= one of those, or declare `@compute @workgroup_size(64) fn {name}()`.",
            )
        stage = next((s for s in ("vertex", "fragment") if s in fn.attrs), None)
        if stage is not None or "compute" not in fn.attrs:
            what = f"a @{stage} entry point" if stage else "a function with no @compute attribute"
            raise _error(
                fn,
                f"`{name}` is {what}; vyre_native runs only @compute entry points, and this"
                f" module's are {_listing(computes)}",
                f"pass entry_point= one of those, or mark `{name}` @compute @workgroup_size(...).",
            )
        return fn

    def workgroup_size(self, name: str, fn: _Fn) -> tuple[int, int, int]:
        """The entry point's workgroup size with the override values applied."""
        attr = fn.attrs.get("workgroup_size")
        if attr is None or not 1 <= len(attr.args) <= 3:
            raise _error(
                attr or fn,
                f"compute entry point `{name}` needs @workgroup_size with one to three dimensions",
                "add e.g. @workgroup_size(64)." if attr is None else "give it one to three dimensions.",
            )
        what = f"@workgroup_size of `{name}`"
        dims = [self.eval_int(arg, attr, what) for arg in attr.args]
        if min(dims) < 1:
            raise _error(attr, f"{what} evaluates to {dims}", "make every dimension at least 1.")
        dims += [1] * (3 - len(dims))
        return dims[0], dims[1], dims[2]

    def used_names(self, entry: str) -> set[str]:
        """The names of module-scope vars and functions that the entry point and the
        functions it reaches mention."""
        names: set[str] = set()
        pending = [entry]
        scope = self.fns.keys() | {var.name for var in self.vars}
        while pending:
            refs = self._refs(self.fns[pending.pop()], scope)
            pending += [r for r in refs - names if r in self.fns and r != entry]
            names |= refs
        return names

    def _refs(self, fn: _Fn, scope: set[str]) -> set[str]:
        """The names of ``scope`` that ``fn``'s body mentions: as identifiers, not as
        member names (after a `.`)."""
        start, end = fn.body
        texts = self.src.texts
        body = texts[start:end]
        found = scope.intersection(body)
        if not found or "." not in body:
            return found
        followers = set()  # what follows each `.`
        at = body.index(".")
        try:
            while True:
                followers.add(body[at + 1] if at + 1 < len(body) else "")
                at = body.index(".", at + 1)
        except ValueError:
            pass
        for name in found & followers:  # counts only if some mention of it follows no `.`
            after = list(zip(texts[start - 1 : end - 1], body))  # the token before the first is `{`
            if body.count(name) == after.count((".", name)):
                found.discard(name)
        return found

    def binding(self, var: _Var, entry: str) -> tuple[int, int, str, int, int]:
        """(group, binding, kind, min_size, binding_size) of a used buffer binding."""
        if "group" not in var.attrs or "binding" not in var.attrs:
            raise _error(
                var,
                f"`{var.name}` is used by entry point `{entry}` but has no @group/@binding",
                "add @group(0) @binding(n), with an n of its own.",
            )
        group = self.attr_int(var.attrs["group"], "group")
        binding = self.attr_int(var.attrs["binding"], "binding")
        if var.space is None:
            where = f"binding @group({group}) @binding({binding}) `{var.name}`"
            raise _error(
                var,
                f"{where} has type {var.type or 'none'}, which vyre_native cannot bind",
                "pass the data in a storage or uniform buffer, or stop using"
                f" `{var.name}` from entry point `{entry}` (unused bindings are ignored).",
            )
        kind = _BINDING_KINDS.get((var.space, var.access))
        if kind is None or var.type is None:
            where = f"binding @group({group}) @binding({binding}) `{var.name}`"
            qual = var.space + (f", {var.access}" if var.access else "")
            raise _error(
                var,
                f"{where} is declared var<{qual}> {var.name}: {var.type or '(no type)'}, which"
                " vyre_native cannot bind",
                "declare it var<storage, read>, var<storage, read_write> or var<uniform>, with a type.",
            )
        layout = self.layout(var.type)
        return group, binding, kind, layout[0], self.binding_size(var.type, layout)
