#!/usr/bin/env bash
# The serving image, built and checked without a registry or a container runtime:
# deploy/Dockerfile's `image` stage built with buildah (vfs storage) around the static x86-64
# musl `tessera` (the edge build), its size reported; then, from the image's own filesystem,
# tests/server/test_kserve_deploy.py (KServe manifests against KServe's schema, image config,
# the ServingRuntime's args run as the kubelet would, /mnt/models) and all 20 shared models
# through tritonclient served by the binary taken out of the image.
# (Running the image with podman is not possible here: crun's setrlimit is refused in these
# sandboxes; the pod is reproduced with namespaces and chroot instead.)
set -euo pipefail
cd "$(dirname "$0")/.."
# Run alone, this script prints the step table itself; under scripts/test.sh, that one does.
owns_step_log=0
[ -z "${TESSERA_STEP_LOG:-}" ] && owns_step_log=1
source scripts/lib/steps.sh
export TESSERA_SHARED="${TESSERA_SHARED:-$(cd .. && pwd)/shared}"

scripts/ensure-packages.sh buildah=buildah ip=iproute2 unshare=util-linux strip=binutils

# The musl binary comes from the edge build's own target directory (scripts/test.sh builds it
# there beside the other suites; here cargo only confirms it is fresh).
target="${CARGO_TARGET_DIR:-target}"
build=(env CARGO_TARGET_DIR="$target-edge" scripts/build-edge.sh x86_64-unknown-linux-musl edge-check serve)
step "image: x86_64-unknown-linux-musl build" 1800 "${build[@]}"
binary="$("${build[@]}" 2>/dev/null)"

source scripts/lib/server-venv.sh
cache="$(server_cache_dir)"
work="$(mktemp -d -t tessera-image.XXXXXX)"
# Image storage of its own, started empty every run.
storage="$cache/containers"
rm -rf "$storage"
buildah_here=(buildah --root "$storage/root" --runroot "$storage/run" --storage-driver vfs)
b() { "${buildah_here[@]}" "$@"; }
container=""
cleanup() {
    if [ -n "$container" ]; then
        b umount "$container" >/dev/null 2>&1 || true
        b rm "$container" >/dev/null 2>&1 || true
    fi
    rm -rf "$work" "$storage" 2>/dev/null || true
}
trap 'rc=$?; cleanup; if [ "$owns_step_log" = 1 ]; then tessera_print_steps "$rc"; fi' EXIT

# What CI puts in the image is the edge-check build stripped; the Dockerfile's own build stage
# makes the `dist` profile (fat LTO), a little smaller (docs/serving.md).
mkdir "$work/build"
strip -o "$work/build/tessera" "$binary"
step "image: build (deploy/Dockerfile, target image)" 300 \
    "${buildah_here[@]}" build --quiet --build-context build="$work/build" --target image -t tessera-serve:ci \
    -f deploy/Dockerfile "$work/build"
b inspect --type image tessera-serve:ci > "$work/config.json"
b push --quiet tessera-serve:ci "oci-archive:$work/image.tar" >/dev/null
python3 - "$work/config.json" "$work/image.tar" <<'EOF'
import json, sys, tarfile
config = json.load(open(sys.argv[1]))["OCIv1"]
with tarfile.open(sys.argv[2]) as t:
    blobs = sum(m.size for m in t.getmembers() if m.name.startswith("blobs/"))
print(f"image tessera-serve:ci: {config['os']}/{config['architecture']}, user {config['config'].get('User')}, "
      f"entrypoint {config['config'].get('Entrypoint')}")
print(f"image size: {blobs / 1e6:.1f} MB as pushed (oci-archive blobs: compressed layer, config, manifest)")
EOF
b images --format 'image size: {{.Size}} unpacked ({{.Name}}:{{.Tag}})' tessera-serve:ci

container="$(b from tessera-serve:ci)"
rootfs="$(b mount "$container")"
echo "image filesystem: $(cd "$rootfs" && find . -type f | sort | tr '\n' ' ')"
if readelf -l "$rootfs/usr/local/bin/tessera" | grep -q INTERP \
    || readelf -d "$rootfs/usr/local/bin/tessera" | grep -q NEEDED; then
    echo "error: the image's tessera is not a static executable" >&2
    exit 1
fi

server_venv
# KServe's schema package alone, in a folder of its own (its server's dependencies are not needed
# and would clash with the venv's pins).
kserve_schema="$cache/kserve-schema"
rm -rf "$kserve_schema"
step "image: kserve schema package" 600 "$venv/bin/pip" install --quiet --disable-pip-version-check \
    --no-deps --target "$kserve_schema" -r tests/server/requirements-kserve.txt
step "image: KServe manifests, image config, pod from the ServingRuntime's args" 300 \
    env PYTHONPATH="$kserve_schema" "$venv/bin/python" tests/server/test_kserve_deploy.py --image-config "$work/config.json" --rootfs "$rootfs"
step "image: 20 models through tritonclient, the image's binary serving" 600 \
    "$venv/bin/python" tests/server/test_tritonclient.py --tessera "$rootfs/usr/local/bin/tessera" \
    --models "$TESSERA_SHARED/models"
