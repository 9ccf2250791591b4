#!/usr/bin/env bash
# Sourced by scripts/test-server.sh and scripts/test-image.sh: `server_cache_dir` names the cache
# folder beside the cargo target directory (CI: ~/.cache/tessera-ci); `server_venv` makes (or
# reuses) the Python venv with tests/server/requirements.txt there and sets $venv.

server_cache_dir() {
    local target="${CARGO_TARGET_DIR:-target}"
    case "$target" in
    target) echo "$HOME/.cache/tessera-ci" ;;
    *) (cd "$(dirname "$target")" && pwd) ;;
    esac
}

server_venv() {
    venv="${TESSERA_SERVER_VENV:-$(server_cache_dir)/venv-server}"
    if [ ! -x "$venv/bin/python" ]; then
        echo "creating $venv"
        python3 -m venv "$venv"
    fi
    step "server: tritonclient venv" 600 \
        "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/server/requirements.txt
}
