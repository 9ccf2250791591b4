#!/usr/bin/env python3
"""What a `tessera` binary's size is made of, by crate (a stand-in for `cargo bloat`).

Usage: python3 bench/binary_size.py BINARY [--top N] [--nm NM] [--families]

Reads the symbol table of an unstripped binary (`nm --size-sort -S`, demangled by `nm -C`), and
adds the sizes of its text symbols per crate: the first path segment of a Rust symbol
(`tract_linalg::...`, `<tract_core::ops::...>`), `[C/asm]` for symbols without one (tract's
assembly kernels, musl). Prints the file size, the total of text symbols and the top crates.
Build an unstripped binary with the same profile but `CARGO_PROFILE_DIST_STRIP=false`.
A wasm module (cargo's output before wasm-opt, whose name section holds the functions' names)
is read the same way: each function body's size under its name, demangled by `c++filt`.
`--families` groups instead by function with its generic arguments left out, with the count
of copies: where monomorphization multiplies code.
"""
import argparse
import collections
import os
import re
import subprocess
import sys

RUST_PATH = re.compile(r"^[<&*\s]*(?:dyn\s+|impl\s+)?([A-Za-z_][A-Za-z0-9_]*)::")


def crate_of(name):
    m = RUST_PATH.match(name)
    if m:
        return m.group(1)
    if name.startswith(("_ZN", "_R")):
        return "[rust, undemangled]"
    return "[C/asm]"


def wasm_functions(path):
    """(demangled name, body size) of each function defined in a wasm module."""
    data = open(path, "rb").read()

    def leb(at):
        value = shift = 0
        while True:
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value, at

    imported = 0
    bodies = []
    names = {}
    at = 8
    while at < len(data):
        section, at = data[at], at + 1
        size, at = leb(at)
        end = at + size
        if section == 2:  # imports: functions among them come first in the index space
            count, p = leb(at)
            for _ in range(count):
                for _ in range(2):
                    n, p = leb(p)
                    p += n
                kind, p = data[p], p + 1
                if kind == 0:
                    imported += 1
                    _, p = leb(p)
                elif kind == 1:
                    p += 1
                    flags, p = leb(p)
                    _, p = leb(p)
                    if flags & 1:
                        _, p = leb(p)
                elif kind == 2:
                    flags, p = leb(p)
                    _, p = leb(p)
                    if flags & 1:
                        _, p = leb(p)
                elif kind == 3:
                    p += 2
                else:
                    _, p = leb(p)
        elif section == 10:  # code
            count, p = leb(at)
            for _ in range(count):
                body, p = leb(p)
                bodies.append(body)
                p += body
        elif section == 0:
            n, p = leb(at)
            if data[p:p + n] == b"name":
                p += n
                while p < end:
                    sub, p = data[p], p + 1
                    sub_size, p = leb(p)
                    if sub == 1:
                        count, q = leb(p)
                        for _ in range(count):
                            index, q = leb(q)
                            n, q = leb(q)
                            names[index] = data[q:q + n].decode("utf-8", "replace")
                            q += n
                    p += sub_size
        at = end
    mangled = [names.get(imported + i, f"[function {imported + i}]") for i in range(len(bodies))]
    demangled = subprocess.run(["c++filt"], input="\n".join(mangled), capture_output=True,
                               text=True, check=True).stdout.splitlines()
    # Names in the v0 form carry each crate's disambiguator (`core[83e1691ff91105ca]::`).
    demangled = [re.sub(r"\[[0-9a-f]{1,16}\]", "", name) for name in demangled]
    return list(zip(demangled, bodies))


def family_of(name):
    """The name with generic arguments (`<...>` after the first path segment) left out."""
    name = re.sub(r"::h[0-9a-f]{16}$", "", name)
    if name.startswith("<"):
        return name[:160]
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            depth += 1
        if depth == 0:
            out.append(ch)
        if ch == ">":
            depth -= 1
    return "".join(out)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--families", action="store_true",
                    help="group by function without generic arguments, with copy counts")
    a = ap.parse_args(argv)
    with open(a.binary, "rb") as f:
        is_wasm = f.read(4) == b"\0asm"
    if is_wasm:
        functions = wasm_functions(a.binary)
    else:
        out = subprocess.run([a.nm, "-C", "-S", "--size-sort", a.binary], capture_output=True,
                             text=True, check=True).stdout
        functions = []
        for line in out.splitlines():
            parts = line.split(None, 3)
            if len(parts) == 4 and parts[2] in "tTwW":
                functions.append((parts[3], int(parts[1], 16)))
    sizes = collections.Counter()
    copies = collections.Counter()
    for name, size in functions:
        key = family_of(name) if a.families else crate_of(name)
        sizes[key] += size
        copies[key] += 1
    total = sum(sizes.values())
    if total == 0:
        print("error: no text symbols: the binary is stripped", file=sys.stderr)
        return 1
    what = "code" if is_wasm else "text symbols"
    print(f"file {os.path.getsize(a.binary) / 1e6:.2f} MB, {what} {total / 1e6:.2f} MB")
    if a.families:
        print("| function (generic arguments left out) | copies | KB | share |")
        print("| --- | ---: | ---: | ---: |")
        for key, size in sizes.most_common(a.top):
            print(f"| {key} | {copies[key]} | {size / 1e3:.0f} | {100 * size / total:.1f}% |")
        return 0
    print("| crate | KB | share |")
    print("| --- | ---: | ---: |")
    for crate, size in sizes.most_common(a.top):
        print(f"| {crate} | {size / 1e3:.0f} | {100 * size / total:.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
