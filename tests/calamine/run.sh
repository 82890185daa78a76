#!/usr/bin/env bash
# The vendored calamine against stock calamine 0.38.0 on third-party test workbooks: fetches the
# source distributions listed in corpus.txt into target/calamine-corpus/ (each checked against
# its pinned SHA-256; a download already there and intact is reused), takes every workbook out of
# them, and runs worker/vendor/calamine-diff over them all with expected-differences.txt.
# Fails on a hash mismatch, on a package that no longer holds a workbook, on a difference that
# list does not name and on a listed difference that no longer occurs.
#
# The archives are fetched with curl rather than `pip download --no-binary :all:`: pip prepares
# an sdist's metadata by running its build backend, which is third-party code and, for some of
# these, a build toolchain; the bytes and their hash are all this test needs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

here=tests/calamine
corpus=target/calamine-corpus
downloads=$corpus/downloads
workbooks=$corpus/workbooks
mkdir -p "$downloads"
rm -rf "$workbooks"

packages=0
while read -r package version sha256 url; do
  case "$package" in '' | '#'*) continue ;; esac
  file=$downloads/$(basename "$url")
  case "$file" in
    *-"$version".tar.gz) ;;
    *) echo "corpus.txt: $package $version: $url is not a .tar.gz of that version" >&2; exit 1 ;;
  esac
  if ! echo "$sha256  $file" | sha256sum --check --status 2>/dev/null; then
    curl --fail --silent --show-error --location --retry 3 --output "$file.part" "$url"
    if ! echo "$sha256  $file.part" | sha256sum --check --status; then
      echo "corpus.txt: $package $version: $url does not have the pinned SHA-256 $sha256" >&2
      rm -f "$file.part"
      exit 1
    fi
    mv "$file.part" "$file"
  fi
  dir=$workbooks/$package-$version
  mkdir -p "$dir"
  # Only the workbooks: the rest of an sdist is never unpacked, let alone run.
  tar -tzf "$file" | grep -iE '\.(xlsx|xlsm|xlsb|xls|ods)$' > "$dir.list" || {
    echo "corpus.txt: $package $version holds no workbook" >&2
    exit 1
  }
  tar -xzf "$file" -C "$dir" --strip-components=1 --verbatim-files-from -T "$dir.list"
  count=$(wc -l < "$dir.list")
  rm "$dir.list"
  echo "corpus: $package $version: $count workbooks"
  packages=$((packages + 1))
done < "$here/corpus.txt"
echo "corpus: $packages packages"

cargo run --quiet --locked --manifest-path worker/vendor/calamine-diff/Cargo.toml \
  --target-dir "${CARGO_TARGET_DIR:-target}" -- \
  check "$workbooks" "$here/expected-differences.txt"
