#!/usr/bin/env bash
# Timed, bounded steps for the test scripts. `step NAME LIMIT_SECONDS COMMAND...` runs COMMAND
# under its own timeout (a hang fails fast, naming the step), and records its wall time; the
# script that first sources this file prints the table of every step (its sub-scripts' too) when
# it exits, passed or not. Shell functions run as steps once exported (`export -f`).

if [ -z "${TESSERA_STEP_LOG:-}" ]; then
    TESSERA_STEP_LOG="$(mktemp -t tessera-steps.XXXXXX)"
    export TESSERA_STEP_LOG
    tessera_steps_started=$SECONDS
    trap 'tessera_print_steps' EXIT
fi

step() {
    local name="$1" limit="$2"
    shift 2
    local start=$SECONDS rc=0
    echo "==> step: $name (limit ${limit} s)"
    # timeout signals the step's whole process group: cargo, node and browsers under it included.
    timeout --kill-after=20 "$limit" "$@" || rc=$?
    printf '%s\t%s\t%s\t%s\n' "$name" "$((SECONDS - start))" "$limit" "$rc" >> "$TESSERA_STEP_LOG"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        echo "error: step '$name' did not finish within its ${limit} s limit" >&2
    elif [ "$rc" -ne 0 ]; then
        echo "error: step '$name' failed (exit $rc)" >&2
    fi
    return "$rc"
}

# Prints the table; returns the script's exit status (given, or the last command's).
tessera_print_steps() {
    local rc=${1:-$?}
    [ -s "$TESSERA_STEP_LOG" ] || return "$rc"
    echo
    echo "steps (wall time on $(nproc) cores; limit; result):"
    awk -F'\t' '{
        r = ($4 == 0) ? "ok" : (($4 == 124 || $4 == 137) ? "TIMED OUT" : "FAILED (" $4 ")")
        printf "  %-44s %6d s  %5.1f min   limit %5d s   %s\n", $1, $2, $2 / 60, $3, r
    }' "$TESSERA_STEP_LOG"
    local total=$((SECONDS - tessera_steps_started))
    printf '  %-44s %6d s  %5.1f min\n' "total" "$total" "$(awk "BEGIN { print $total / 60 }")"
    rm -f "$TESSERA_STEP_LOG"
    return "$rc"
}
