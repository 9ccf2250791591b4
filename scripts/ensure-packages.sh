#!/usr/bin/env bash
# Installs the Debian packages named as arguments when their command is missing.
# Usage: scripts/ensure-packages.sh COMMAND=PACKAGE... (e.g. chromium=chromium qemu-aarch64=qemu-user);
# a key starting with / is a file pattern instead (e.g. /usr/share/vulkan/icd.d/lvp_icd*.json=mesa-vulkan-drivers).
set -euo pipefail
missing=()
for pair in "$@"; do
    key="${pair%%=*}"
    if [[ "$key" == /* ]]; then
        compgen -G "$key" >/dev/null || missing+=("${pair#*=}")
    else
        command -v "$key" >/dev/null 2>&1 || missing+=("${pair#*=}")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
    echo "error: the tests need these Debian packages: ${missing[*]}" >&2
    exit 1
fi
