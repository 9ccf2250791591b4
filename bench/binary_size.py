#!/usr/bin/env python3
"""What a `tessera` binary's size is made of, by crate (a stand-in for `cargo bloat`).

Usage: python3 bench/binary_size.py BINARY [--top N]

Reads the symbol table of an unstripped binary (`nm --size-sort -S`, demangled by `nm -C`), and
adds the sizes of its text symbols per crate: the first path segment of a Rust symbol
(`tract_linalg::...`, `<tract_core::ops::...>`), `[C/asm]` for symbols without one (tract's
assembly kernels, musl). Prints the file size, the total of text symbols and the top crates.
Build an unstripped binary with the same profile but `CARGO_PROFILE_DIST_STRIP=false`.
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


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--nm", default="nm")
    a = ap.parse_args(argv)
    out = subprocess.run([a.nm, "-C", "-S", "--size-sort", a.binary], capture_output=True,
                         text=True, check=True).stdout
    sizes = collections.Counter()
    for line in out.splitlines():
        parts = line.split(None, 3)
        if len(parts) < 4 or parts[2] not in "tTwW":
            continue
        sizes[crate_of(parts[3])] += int(parts[1], 16)
    total = sum(sizes.values())
    if total == 0:
        print("error: no text symbols: the binary is stripped", file=sys.stderr)
        return 1
    print(f"file {os.path.getsize(a.binary) / 1e6:.2f} MB, text symbols {total / 1e6:.2f} MB")
    print("| crate | text KB | share |")
    print("| --- | ---: | ---: |")
    for crate, size in sizes.most_common(a.top):
        print(f"| {crate} | {size / 1e3:.0f} | {100 * size / total:.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
