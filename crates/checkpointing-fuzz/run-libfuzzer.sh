#!/usr/bin/env bash
# Runs every fuzz target under libFuzzer (cargo-fuzz, nightly Rust) for
# SECONDS each (default 600), starting from the committed corpus, then
# minimises what it found back into corpus/<target>/. Prints each target's
# executions and corpus size; a crash stops the script with libFuzzer's
# report and the input under fuzz/artifacts/<target>/.
#   bash crates/checkpointing-fuzz/run-libfuzzer.sh [SECONDS] [TARGET ...]
# Needs `cargo install cargo-fuzz` and a nightly toolchain (not CI's: CI runs
# the same targets on stable through tests/corpus.rs).
set -euo pipefail
cd "$(dirname "$0")/fuzz"
seconds="${1:-600}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(action_text action_json schedule_spec record disk_snapshot \
    compressed_blob journal cli_args hdf5_snapshot)
for target in "${targets[@]}"; do
    work="corpus/$target"
    mkdir -p "$work"
    cp -n "../corpus/$target"/* "$work"/ 2>/dev/null || true
    log="$(mktemp)"
    cargo +nightly fuzz run -s none "$target" "$work" -- \
        -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -max_len=4096 \
        -print_final_stats=1 >"$log" 2>&1 || { tail -n 60 "$log"; exit 1; }
    execs="$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$')"
    found="$(ls "$work" | wc -l)"
    # Minimise the working corpus in place (a set cover of its features),
    # then keep it as the committed one, with the seed and found inputs.
    cargo +nightly fuzz cmin -s none "$target" "$work" -- -set_cover_merge=1 >/dev/null 2>&1
    keep="$(mktemp -d)"
    cp "../corpus/$target"/seed-* "../corpus/$target"/found-* "$keep"/ 2>/dev/null || true
    rm -rf "../corpus/$target" && cp -r "$work" "../corpus/$target"
    cp -n "$keep"/* "../corpus/$target"/ 2>/dev/null || true
    rm -rf "$keep"
    echo "$target: $execs executions in $seconds s, $found inputs in the corpus, $(ls "../corpus/$target" | wc -l) kept after cmin, no crash"
    rm -f "$log"
done
