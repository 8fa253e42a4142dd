"""Generated WGSL of the shapes that make naga recurse once per link or level: chains of
declarations each naming the next (const, override, alias, struct, fn), and nesting
(parentheses, array types, indexing), for the compile-stack tests (test_compile_stack.py).

Names are the shortest unique ones that are no WGSL word ("Q" and base-62 digits), so a
link is as few bytes as its kind allows: the densest chain a source of its length holds.
"""

from __future__ import annotations

import string

DIGITS = string.ascii_letters + string.digits
DECLARATIONS = ("const", "override", "alias", "struct", "fn")
NESTINGS = ("paren", "array", "index")
OUTPUT = "@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n"


def name(i: int) -> str:
    """The i-th name: Q, then i + 1 in bijective base 62 (no WGSL keyword starts with Q)."""
    s, i = "", i + 1
    while i:
        i, r = divmod(i - 1, 62)
        s = DIGITS[r] + s
    return "Q" + s


def chain(kind: str, links: int, used: bool = True) -> str:
    """A module of `links` declarations of `kind`, each naming the next, and an entry
    point `main` that uses the first (not for used=False: a call chain the entry point
    reaches is inlined by the driver's compiler at pipeline creation, in time and memory
    that grow with its length, which is no question of naga's stack)."""
    n = [name(i) for i in range(links + 1)]
    if kind == "const":
        decls = [f"const {n[i]}={n[i + 1]};" for i in range(links)] + [f"const {n[links]}=1u;"]
        use = n[0]
    elif kind == "override":
        decls = [f"override {n[i]}={n[i + 1]};" for i in range(links)] + [f"override {n[links]}=1u;"]
        use = n[0]
    elif kind == "alias":
        decls = [f"alias {n[i]}={n[i + 1]};" for i in range(links)] + [f"alias {n[links]}=u32;"]
        use = f"{n[0]}(1u)"
    elif kind == "struct":
        decls = [f"struct {n[i]}{{a:{n[i + 1]}}}" for i in range(links)] + [f"struct {n[links]}{{a:u32}}"]
        decls.append(f"var<private> first:{n[0]};")
        use = "1u"
    elif kind == "fn":
        decls = [f"fn {n[i]}()->u32{{return {n[i + 1]}();}}" for i in range(links)]
        decls.append(f"fn {n[links]}()->u32{{return 1u;}}")
        use = f"{n[0]}()"
    else:
        raise ValueError(kind)
    return "\n".join(decls) + "\n" + entry(use if used else "1u")


def nested(kind: str, levels: int) -> str:
    """A module nesting `levels` deep: parentheses, array types or indexing."""
    decls = ""
    if kind == "paren":
        use = "(" * levels + "1u" + ")" * levels
    elif kind in ("array", "index"):
        decls = "var<private> deep:" + "array<" * levels + "u32" + ",1>" * levels + ";\n"
        use = "deep" + "[0]" * levels if kind == "index" else "1u"
    else:
        raise ValueError(kind)
    return decls + entry(use)


def entry(value: str) -> str:
    return OUTPUT + f"@compute @workgroup_size(1)\nfn main() {{ o[0] = {value}; }}\n"


def padded(text: str, size: int) -> str:
    """`text` then a comment line, exactly `size` bytes of UTF-8 in all."""
    room = size - len(text.encode()) - 3  # "//" and its line break
    assert room >= 0, (len(text), size)
    return text + "//" + "x" * room + "\n"
