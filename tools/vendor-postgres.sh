#!/usr/bin/env bash
# Builds vendor/postgres from the npm tarball named in
# vendor/postgres-patches/UPSTREAM (package@version and the registry's sha512
# integrity) and the patches vendor/postgres-patches/*.patch, applied in name
# order. With --check, builds into a temporary directory and fails unless the
# committed vendor/postgres is byte for byte that result.
set -euo pipefail
cd "$(dirname "$0")/.."

patches=vendor/postgres-patches
read -r spec integrity <"$patches/UPSTREAM"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

npm pack "$spec" --pack-destination "$work" --prefer-offline --silent >/dev/null
tarball=$(ls "$work"/*.tgz)
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$actual" != "$integrity" ]; then
  echo "ERROR: $spec tarball integrity is $actual, UPSTREAM records $integrity" >&2
  exit 1
fi

# The copy holds the ES module sources and their types, nothing else.
tar -xzf "$tarball" -C "$work"
out="$work/postgres"
mkdir -p "$out/types"
cp -R "$work/package/src" "$out/src"
cp "$work/package/types/index.d.ts" "$out/types/index.d.ts"
for p in "$patches"/*.patch; do
  patch -d "$out" -p1 --forward --fuzz=0 --no-backup-if-mismatch --quiet <"$p" ||
    { echo "ERROR: $p does not apply to $spec" >&2; exit 1; }
done

if [ "${1:-}" = "--check" ]; then
  if ! diff -r "$out" vendor/postgres; then
    echo "ERROR: vendor/postgres differs from $spec + $patches/*.patch; edit a patch and run: deno task vendor:postgres" >&2
    exit 1
  fi
  echo "vendor/postgres is $spec + $(ls "$patches"/*.patch | wc -l) patches"
else
  rm -rf vendor/postgres
  cp -R "$out" vendor/postgres
  echo "vendor/postgres rebuilt from $spec + $(ls "$patches"/*.patch | wc -l) patches"
fi
