#!/usr/bin/env bash
# Builds the static, cpu-only `tessera` binary for an edge board.
# Usage: scripts/build-edge.sh TARGET [CARGO_PROFILE] [serve]   (profile: release (default; one
#   codegen unit), edge (a board's: size first), dist (the serving image's) or edge-check (CI's:
#   Cargo.toml says what each leaves out))
#   TARGET: aarch64-unknown-linux-musl | thumbv7neon-unknown-linux-gnueabihf (32-bit ARM with
#           NEON, Thumb-2 code: Raspberry Pi 2/3 OS) | x86_64-unknown-linux-musl
#   serve: with `tessera serve` (tokio, axum) and SIMD FFTs (the serving image); left out by default,
#          as are the CLI's other default features (pictures, colours, the bench progress bar).
# The edge profile also rebuilds the standard library (nightly's -Z build-std, below): it needs
# the nightly toolchain and its rust-src component.
# Prints the binary's path last. Needs `rustup target add TARGET` and, for the arm targets,
# Debian's cross gcc (gcc-aarch64-linux-gnu / gcc-arm-linux-gnueabihf): tract-linalg assembles
# its NEON kernels with it, and it drives the link. musl targets link Rust's self-contained musl
# CRT and libc; 32-bit ARM uses glibc linked statically (`+crt-static`) because rustup has no
# armv7 musl standard library for this toolchain, and Thumb-2 code because glibc's is: an ARM-mode
# build (armv7-unknown-linux-gnueabihf) got a linker veneer to glibc's memchr whose ifunc entry
# lost its Thumb bit, and crashed at start (SIGILL in memchr_ifunc).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:?usage: scripts/build-edge.sh TARGET [release|edge|dist|edge-check]}"
profile="${2:-release}"
features=()
case "${3:-}" in
"") ;;
serve) features=(--features serve,simd-fft) ;;
*)
    echo "error: unknown option '$3' (expected: serve)" >&2
    exit 2
    ;;
esac

case "$target" in
aarch64-unknown-linux-musl) gcc=aarch64-linux-gnu-gcc ;;
thumbv7neon-unknown-linux-gnueabihf) gcc=arm-linux-gnueabihf-gcc ;;
armv7-unknown-linux-gnueabihf)
    echo "error: for 32-bit ARM build thumbv7neon-unknown-linux-gnueabihf (see the comment above)" >&2
    exit 2
    ;;
x86_64-unknown-linux-musl) gcc=gcc ;;
*)
    echo "error: unknown edge target '$target'" >&2
    exit 2
    ;;
esac
if ! command -v "$gcc" >/dev/null 2>&1; then
    echo "error: $gcc not found (Debian: apt-get install ${gcc%-gcc}-gcc... see README 'Edge boards')" >&2
    exit 1
fi
if ! rustup target list --installed | grep -qx "$target"; then
    rustup target add "$target"
fi

env_target="$(echo "$target" | tr '[:lower:]-' '[:upper:]_')"
export "CARGO_TARGET_${env_target}_LINKER=$gcc"
export "CC_${target//-/_}=$gcc"
# Static: musl targets are static by default; glibc needs crt-static.
rustflags="-C target-feature=+crt-static"
# 32-bit ARM links with gold: once .text passed a Thumb-2 branch's 16 MiB reach (16.03 MiB,
# 2026-11-28: long-branch veneers needed), the GNU ld link crashed before its first system call,
# likely the veneer bug above; gold's link runs (docs/edge.md).
[ "$target" = thumbv7neon-unknown-linux-gnueabihf ] && rustflags="$rustflags -C link-arg=-fuse-ld=gold"
# The edge profile aborts on panic (Cargo.toml): no unwind tables then, which Rust emits for
# Linux targets anyway (for backtraces), ~2.3 MB of an arm64 binary's .eh_frame.
toolchain=()
build_std=()
if [ "$profile" = edge ]; then
    rustflags="$rustflags -C force-unwind-tables=no"
    # The standard library as shipped is compiled for panic = "unwind": its generic code (sorts,
    # iterators, drop glue), instantiated in every crate, brings landing pads and so unwind
    # tables along, and its sorts are large. Rebuilt with panic_abort and std's own
    # optimize_for_size (small sorts and number formatting): arm64 12.28 -> 10.91 MB (docs/edge.md).
    toolchain=(+nightly)
    build_std=(-Z build-std=std,panic_abort -Z build-std-features=optimize_for_size)
    if ! rustup component list --installed --toolchain nightly 2>/dev/null | grep -q '^rust-src'; then
        echo "error: the edge profile rebuilds the standard library: it needs the nightly toolchain" \
            "and its source (rustup toolchain install nightly; rustup component add rust-src --toolchain nightly)" >&2
        exit 1
    fi
    # The musl C runtime (crt objects, libc.a, libunwind.a) comes from the target's standard
    # library package, which rustup lacks for nightly on aarch64 musl (a 404): a sysroot that is
    # nightly's plus stable's copy of that runtime (the same musl release) stands in.
    nightly_sysroot="$(rustc +nightly --print sysroot)"
    if [[ "$target" == *-musl ]] && [ ! -d "$nightly_sysroot/lib/rustlib/$target/lib/self-contained" ]; then
        crt="$(rustc --print sysroot)/lib/rustlib/$target/lib/self-contained"
        sysroot="${CARGO_TARGET_DIR:-target}/edge-sysroot/$target"
        rm -rf "$sysroot"
        mkdir -p "$sysroot/lib/rustlib/$target/lib"
        for entry in "$nightly_sysroot"/lib/rustlib/*; do
            ln -s "$entry" "$sysroot/lib/rustlib/"
        done
        cp -r "$crt" "$sysroot/lib/rustlib/$target/lib/"
        rustflags="$rustflags --sysroot $(cd "$sysroot" && pwd)"
    fi
    # std rebuilt without the prebuilt compiler_builtins' C parts lacks __popcountdi2, which
    # mimalloc calls: gcc's runtime library has it.
    rustflags="$rustflags -C link-arg=-lgcc"
    # Panic messages without their source file, line and column: each panic site's location
    # record and path string are left out (arm64 -262 KB; the message itself stays).
    rustflags="$rustflags -Z location-detail=none"
    # Identical code folding: generic code compiled per type is often the same machine code,
    # which the linker keeps once (arm64 -244 KB). Rust marks its functions `unnamed_addr`, so
    # folding them is allowed. rustc's own lld does it for 64-bit targets; 32-bit ARM keeps gold
    # (above), which folds too.
    if [ "$target" = thumbv7neon-unknown-linux-gnueabihf ]; then
        rustflags="$rustflags -C link-arg=-Wl,--icf=all"
    else
        host="$(rustc +nightly -vV | sed -n 's/^host: //p')"
        rustflags="$rustflags -C link-arg=-B$nightly_sysroot/lib/rustlib/$host/bin/gcc-ld -C link-arg=-fuse-ld=lld -C link-arg=-Wl,--icf=all"
    fi
fi
export "CARGO_TARGET_${env_target}_RUSTFLAGS=$rustflags"

# The release profile here with one codegen unit, as dist has: on 2 cores the arm64 build takes
# less CPU and less time than with 16 (762 -> 666 s of CPU, 389 -> 342 s; tract-core alone 313 ->
# 260 s), and what CI checks is closer to what dist ships.
if [ "$profile" = release ]; then export CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1; fi
cargo "${toolchain[@]}" build --locked --profile "$profile" --target "$target" -p tessera-cli \
    --no-default-features "${features[@]}" "${build_std[@]}" >&2
dir="$profile"
[ "$profile" = dev ] && dir=debug
echo "${CARGO_TARGET_DIR:-target}/$target/$dir/tessera"
