#!/usr/bin/env bash
# Checks that the fork is the calamine release it names, as published, plus this series and
# nothing else: the patches, reverse-applied last to first to a copy of src/ and the manifest,
# must give back the published src/ (its SHA-256 sums are in calamine-<version>.sha256), file for
# file. A change to src/ that is not in a patch fails here; so does a patch that no longer
# applies. Offline.
set -euo pipefail
patches=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
crate=$(dirname "$patches")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sums=$(ls "$patches"/calamine-*.sha256)
release=$(basename "$sums" .sha256)
cp -r "$crate/src" "$crate/Cargo.toml" "$work/"
cd "$work"
mapfile -t series < <(ls "$patches"/[0-9][0-9][0-9][0-9]-*.patch | sort -r)
for patch in "${series[@]}"; do
  git apply --reverse --whitespace=nowarn "$patch" ||
    { echo "calamine fork: $(basename "$patch") does not reverse-apply to src/" >&2; exit 1; }
done
sha256sum --check --quiet "$sums"
if ! diff <(find src -type f | sort) <(awk '{print $2}' "$sums" | sort); then
  echo "calamine fork: src/ holds files that neither $release nor a patch adds" >&2
  exit 1
fi
echo "calamine fork: src/ is $release plus patches 1-${#series[@]}"
