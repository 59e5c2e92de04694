#!/usr/bin/env bash
# Builds vendor/<name> for each vendor/<name>-patches/ (or the names given):
# the npm tarball named in its UPSTREAM (first line: package@version and the
# registry's sha512 integrity; second line: the package's paths to keep) and
# its *.patch, applied in name order. With --check, builds into a temporary
# directory and fails unless each committed vendor/<name> is byte for byte
# that result.
set -euo pipefail
cd "$(dirname "$0")/.."

check=
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for d in vendor/*-patches; do names+=("$(basename "$d" -patches)"); done
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for name in "${names[@]}"; do
  patches=vendor/$name-patches
  { read -r spec integrity; read -r -a keep; } <"$patches/UPSTREAM"
  mkdir "$work/$name"
  npm pack "$spec" --pack-destination "$work/$name" --prefer-offline --silent >/dev/null
  tarball=$(ls "$work/$name"/*.tgz)
  actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
  if [ "$actual" != "$integrity" ]; then
    echo "ERROR: $spec tarball integrity is $actual, UPSTREAM records $integrity" >&2
    exit 1
  fi

  # The copy holds the paths UPSTREAM keeps (sources and types), nothing else.
  tar -xzf "$tarball" -C "$work/$name"
  out="$work/$name/out"
  for path in "${keep[@]}"; do
    mkdir -p "$out/$(dirname "$path")"
    cp -R "$work/$name/package/$path" "$out/$path"
  done
  for p in "$patches"/*.patch; do
    patch -d "$out" -p1 --forward --fuzz=0 --no-backup-if-mismatch --quiet <"$p" ||
      { echo "ERROR: $p does not apply to $spec" >&2; exit 1; }
  done

  if [ -n "$check" ]; then
    if ! diff -r "$out" "vendor/$name"; then
      echo "ERROR: vendor/$name differs from $spec + $patches/*.patch; edit a patch and run: deno task vendor $name" >&2
      exit 1
    fi
    echo "vendor/$name is $spec + $(ls "$patches"/*.patch | wc -l) patches"
  else
    rm -rf "vendor/$name"
    cp -R "$out" "vendor/$name"
    echo "vendor/$name rebuilt from $spec + $(ls "$patches"/*.patch | wc -l) patches"
  fi
done
