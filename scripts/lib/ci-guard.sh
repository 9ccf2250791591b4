#!/usr/bin/env bash
# Refuses to run the suites narrowed, blessed or redirected from the environment: a CI run (and
# the README's test command) checks everything or does not start. Sourced first by .ci/run and
# scripts/test.sh; run alone it exits 0 when the environment is clean, 2 otherwise.

# TESSERA_* variables that only point at data, tools or stricter checks.
tessera_allowed_vars=(TESSERA_SHARED TESSERA_LOG TESSERA_NVRTC_VENV TESSERA_SERVER_VENV
    TESSERA_REQUIRE_NVRTC TESSERA_REQUIRE_CUDA TESSERA_STEP_LOG)

ci_guard() {
    local refused=() name
    # Every TESSERA_* not on the allowed list narrows, blesses or redirects something
    # (TESSERA_FILTER, TESSERA_ONLY, TESSERA_BLESS, TESSERA_BLESS_REMOVE, TESSERA_PASS_LISTS_TO...).
    while IFS= read -r name; do
        [[ " ${tessera_allowed_vars[*]} " == *" $name "* ]] || refused+=("$name")
    done < <(compgen -e | grep '^TESSERA_' || true)
    # Test runners' own narrowing switches that travel in the environment.
    [ -n "${PYTEST_ADDOPTS+set}" ] && refused+=(PYTEST_ADDOPTS)
    [[ "${NODE_OPTIONS:-}" == *--test-name-pattern* || "${NODE_OPTIONS:-}" == *--test-skip-pattern* \
        || "${NODE_OPTIONS:-}" == *--test-only* ]] && refused+=(NODE_OPTIONS)
    if [ ${#refused[@]} -gt 0 ]; then
        echo "error: refusing to run the test suites with ${refused[*]} set: they narrow, bless or" \
            "redirect what is checked. Unset them (allowed: ${tessera_allowed_vars[*]})." >&2
        return 2
    fi
}

ci_guard || exit $?
