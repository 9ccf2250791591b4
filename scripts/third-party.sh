#!/usr/bin/env bash
# The patched crates under third_party/ carry a hash of their content in their version's build
# metadata (e.g. tract-linalg 0.23.9+tessera.<hash>). Cargo keys a build on the version, so each
# content gets builds of its own in a target directory, and the files' mtimes, which cargo reads
# for path dependencies and which a fresh clone sets to now, can safely be dated back: CI's runs
# then reuse what an earlier clone built (tract-core and all that depends on it, six times)
# instead of rebuilding it every run.
# Usage: scripts/third-party.sh check    content and version agree, else fail; then date the files
#                                         back to a fixed time (scripts/test.sh, before any build)
#        scripts/third-party.sh update   write the content's hash into the version and relock
#                                         Cargo.lock and fuzz/Cargo.lock (after changing a crate)
#        scripts/third-party.sh patch    write third_party/<crate>.patch: the copy against the
#                                         registry's release (fetched if missing), version aside
set -euo pipefail
cd "$(dirname "$0")/.."
crates=(third_party/tract-core third_party/tract-data third_party/tract-hir third_party/tract-linalg
    third_party/tract-nnef third_party/tract-onnx-opl)
# 2000-01-01 UTC: older than any build, so cargo never finds a dated-back file newer than one.
fixed_mtime=946684800
# The package's own version line: the manifest's first (in [package]); later ones are its
# dependencies'. Left out of the content's hash, read, and rewritten by the functions below.
version_line='^version = "[^"]*"$'

# A hash of every file of the crate, its manifest without the package's version line (which holds it).
content_hash() {
    local dir="$1" file
    while IFS= read -r -d '' file; do
        if [ "$file" = "$dir/Cargo.toml" ]; then
            printf '%s %s\n' "$file" "$(sed "0,/$version_line/{//d}" "$file" | sha256sum | cut -c1-64)"
        else
            printf '%s %s\n' "$file" "$(sha256sum < "$file" | cut -c1-64)"
        fi
    done < <(find "$dir" -type f -print0 | LC_ALL=C sort -z) | sha256sum | cut -c1-12
}

# The package's own version: the value of its version line.
manifest_version() {
    grep -m 1 "$version_line" "$1/Cargo.toml" | sed 's/^version = "\(.*\)"$/\1/'
}

# The version the content says: the release's, with the content's hash as build metadata.
expected_version() {
    local version
    version="$(manifest_version "$1")"
    echo "${version%%+*}+tessera.$(content_hash "$1")"
}

# The registry's unpacked release of a crate (cargo fetches it in a scratch project if needed).
registry_copy() {
    local name="$1" release="$2" found scratch
    found="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$name-$release" 2>/dev/null | head -1)"
    if [ -z "$found" ]; then
        scratch="$(mktemp -d)"
        cargo new --quiet --lib "$scratch/fetch"
        printf '%s = "=%s"\n' "$name" "$release" >> "$scratch/fetch/Cargo.toml"
        (cd "$scratch/fetch" && cargo fetch --quiet)
        rm -rf "$scratch"
        found="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$name-$release" | head -1)"
    fi
    echo "$found"
}

case "${1:-}" in
patch)
    for dir in "${crates[@]}"; do
        name="${dir##*/}"
        release="$(manifest_version "$dir")"
        release="${release%%+*}"
        pristine="$(registry_copy "$name" "$release")"
        scratch="$(mktemp -d)"
        cp -r "$pristine" "$scratch/a"
        cp -r "$dir" "$scratch/b"
        rm -f "$scratch/a/.cargo-ok"
        # The version line differs by design (the content's hash): left out of the patch.
        sed -i "0,/$version_line/{//d}" "$scratch/a/Cargo.toml" "$scratch/b/Cargo.toml"
        (cd "$scratch" && diff -ruN a b || true) |
            sed -E -e '/^diff -ruN /d' -e '/^Binary files /d' -e 's#^(---|\+\+\+) ([ab]/[^\t]*)\t.*#\1 \2#' > "$dir.patch"
        rm -rf "$scratch"
        echo "$dir.patch: $(grep -c '^+++ ' "$dir.patch") files against $name $release"
    done
    ;;
check)
    for dir in "${crates[@]}"; do
        version="$(manifest_version "$dir")"
        expected="$(expected_version "$dir")"
        if [ "$version" != "$expected" ]; then
            echo "error: $dir changed but its version did not: it is $version, its content says" \
                "$expected; run scripts/third-party.sh update and commit the result" >&2
            exit 1
        fi
        find "$dir" -exec touch -h -d "@$fixed_mtime" {} +
        echo "$dir: $version, files dated back to $(date -u -d "@$fixed_mtime" +%F)"
    done
    ;;
update)
    for dir in "${crates[@]}"; do
        version="$(manifest_version "$dir")"
        expected="$(expected_version "$dir")"
        sed -i "0,/$version_line/s//version = \"$expected\"/" "$dir/Cargo.toml"
        echo "$dir: $version -> $expected"
    done
    # Relock without building (that crate's entry only): both workspaces patch it.
    for name in "${crates[@]##*/}"; do
        cargo update --quiet -p "$name"
        (cd fuzz && cargo update --quiet -p "$name")
    done
    ;;
*)
    echo "usage: scripts/third-party.sh check|update|patch" >&2
    exit 2
    ;;
esac
