#!/usr/bin/env bash
# The device tool copies the working tree (tracked and untracked files) and `carry` (the .whl folder)
# to the GPU machine, 64 MiB in all. Past sessions' largest archives are not needed there: `park` moves
# them out of the tree before a GPU session (git then lists them as deleted), `restore` puts them back
# after it; both print what the tree and .whl then weigh. Run from the repository root.
#   bash benchmarks/device_tree.sh park      # before the first `run`
#   bash benchmarks/device_tree.sh restore   # after the last one, before committing
set -euo pipefail
PARKED=${PARKED:-/tmp/evo-parked}
FILES=(  # scripts of earlier sessions read some of these; none of the next sessions' scripts does
  benchmarks/session10/run_b/llm_layers.sqlite.gz
  benchmarks/session10/run_c/grid125.sqlite.gz
  benchmarks/session9/run_b/llm_layers.sqlite.gz
  benchmarks/search/compare24_h200_run3/archives.tgz
  benchmarks/search/compare24_h200_run4/archives.tgz
  benchmarks/session6/run_c/compare24_archives.tgz
  benchmarks/session7/run_a/llm_layers.sqlite.gz
  benchmarks/session7/run_b/llm_layers.sqlite.gz
  benchmarks/session8/run_c/llm_layers.sqlite.gz
  benchmarks/session12/run_b/compare24_archives.tgz
  benchmarks/session16/llm_layers/llm_layers.sqlite.gz
  benchmarks/session19/llm_layers/llm_layers.sqlite.gz
  benchmarks/session8/run_a/llm_layers.sqlite.gz
  benchmarks/session18/pdl16.sqlite.gz
  benchmarks/session23/user_view_grid125/user_view.tgz
)
case "${1:-}" in
  park)
    for f in "${FILES[@]}"; do
      [ -f "$f" ] || continue
      mkdir -p "$PARKED/$(dirname "$f")" && mv "$f" "$PARKED/$f"
    done ;;
  restore)
    for f in "${FILES[@]}"; do
      [ -f "$PARKED/$f" ] && mv "$PARKED/$f" "$f"
    done ;;
  *) echo "usage: bash benchmarks/device_tree.sh park|restore" >&2; exit 2 ;;
esac
# tracked files that are parked are listed but absent: du skips them (and fails, hence the `|| true`)
tree=$( (git ls-files -co --exclude-standard -z | xargs -0 du -cb 2>/dev/null || true) | tail -1 | cut -f1)
whl=$(du -sb .whl 2>/dev/null | cut -f1 || echo 0)
echo "tree $((tree / 1048576)) MiB + .whl $((whl / 1048576)) MiB = $(((tree + whl) / 1048576)) MiB of 64 MiB"
