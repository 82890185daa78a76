#!/usr/bin/env bash
# Checks on the tree and its history that no compiler makes, run early by .ci/run:
#  (a) comments and docs say what and why, never which ticket asked: no tracked file names an issue
#      or a ticket by its number, in the singular or the plural (the vendored calamine and
#      docs/benchmarks-history.md, a record of the past, are left as they are);
#  (b) every commit subject since BASE holds at most 72 characters (the story goes in the body).
#      Older history is kept as it was written. In a clone without BASE (a shallow one), the last
#      50 commits are checked instead.
# Prints every offending line or commit and exits 1 when there is one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BASE=61e6144
MAX_SUBJECT=72
# Count characters, not bytes, in subjects such as "a → b".
export LC_ALL=C.UTF-8

failed=0

references=$(git grep -n -I -i -E '(^|[^[:alnum:]_])(issue|ticket)s?[[:space:]]+#?[0-9]+' -- . \
  ':(exclude)worker/vendor/' ':(exclude)docs/benchmarks-history.md' || true)
if [ -n "$references" ]; then
  echo "hygiene: issue or ticket numbers in tracked files (say what and why instead):"
  printf '%s\n' "$references" | sed 's/^/  /'
  failed=1
fi

if git cat-file -e "$BASE^{commit}" 2>/dev/null; then
  range=("$BASE..HEAD")
  checked="commits since $BASE"
else
  range=(-n 50 HEAD)
  checked="the last 50 commits ($BASE is not in this clone)"
fi
long=()
while IFS=' ' read -r hash subject; do
  if [ "${#subject}" -gt "$MAX_SUBJECT" ]; then
    long+=("$hash (${#subject} characters): $subject")
  fi
done < <(git log --format='%h %s' "${range[@]}")
if [ "${#long[@]}" -gt 0 ]; then
  echo "hygiene: commit subjects over $MAX_SUBJECT characters among $checked:"
  printf '  %s\n' "${long[@]}"
  failed=1
fi

if [ "$failed" = 0 ]; then
  echo "hygiene: no issue or ticket numbers; subjects of $checked within $MAX_SUBJECT characters"
fi
exit "$failed"
