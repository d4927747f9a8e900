#!/usr/bin/env bash
# `make release-check VERSION=vX.Y.Z`: what a release job runs, here, for this Linux platform, with
# the checks a release must pass. Each step prints what it found; the first failure stops it.
#
# Usage: krew/release-check.sh VERSION OS ARCH BIN_DIR   (the Makefile passes them)
#   1. `make dist`: the static release build, its man pages and THIRD_PARTY_LICENSES, the archive
#   2. the archive's files: both binaries, LICENSE, THIRD_PARTY_LICENSES, a man page per command
#   3. its size: at most 25 MB (10^6 bytes), the budget of docs/performance.md
#   4. linkage: the binaries are static (no NEEDED entry, no program interpreter), so no libssl or
#      glibc of the user's machine is needed; were one dynamic, it would have to need no libssl
#      and no glibc symbol newer than GLIBC_FLOOR
#   5. licences: THIRD_PARTY_LICENSES names every crate cargo links into the binary
#   6. the krew manifest for this platform (krew/render.sh), `krew install --manifest --archive`
#      into a scratch KREW_ROOT with the krew CLI of tests/testenv/build-tools.sh, and the real
#      kubectl running the installed plugin: `kubectl gitops version --client` names VERSION
set -euo pipefail

GLIBC_FLOOR=2.28
ARCHIVE_BUDGET_BYTES=25000000

die() { printf 'release-check: error: %s\n' "$*" >&2; exit 1; }
step() { printf '\n== %s\n' "$*"; }
(($# == 4)) || die "usage: krew/release-check.sh VERSION OS ARCH BIN_DIR"
version=$1 os=$2 arch=$3 bin_dir=$4
[[ $os == linux ]] || die "release-check runs on Linux (this is $os): the linkage check reads ELF"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
for tool in readelf python3 kubectl tar; do
	command -v "$tool" >/dev/null || die "$tool not found (Debian packages binutils, python3, kubectl, tar)"
done
target=$(basename "$(dirname "$bin_dir")")
if [[ $target == *-musl ]]; then
	command -v musl-gcc >/dev/null || die "musl-gcc not found: the static build needs it (Debian package musl-tools)"
	rustup target list --installed 2>/dev/null | grep -qx "$target" ||
		die "the Rust target $target is not installed (rustup target add $target)"
fi

step "make dist VERSION=$version"
make --no-print-directory dist VERSION="$version"
archive=dist/kubectl-gitops_${version}_${os}_${arch}.tar.gz
[[ -f $archive ]] || die "make dist wrote no $archive"

step "the archive's files"
tar -tzf "$archive" | tee /tmp/release-check.$$.list
trap 'rm -f /tmp/release-check.$$.list' EXIT
expected=(kubectl-gitops kubectl_complete-gitops LICENSE THIRD_PARTY_LICENSES man/kubectl-gitops.1)
for command in $(sed -n 's/^MAN_COMMANDS := //p' Makefile); do
	expected+=("man/kubectl-gitops-$command.1")
done
for file in "${expected[@]}"; do
	grep -qx "$file" /tmp/release-check.$$.list || die "$archive lacks $file"
done
echo "all ${#expected[@]} expected files are there"

step "size"
size=$(stat -c %s "$archive")
awk -v f="$archive" -v s="$size" -v b="$ARCHIVE_BUDGET_BYTES" 'BEGIN { printf "%s: %d bytes (%.2f MB), budget %.0f MB\n", f, s, s / 1e6, b / 1e6 }'
((size <= ARCHIVE_BUDGET_BYTES)) || die "the archive is over its budget"

step "linkage"
# newest_glibc FILE: the newest GLIBC_x.y version FILE's dynamic symbols need, or nothing.
newest_glibc() { readelf --dyn-syms --wide "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n1; }
for binary in kubectl-gitops kubectl_complete-gitops; do
	file=$bin_dir/$binary
	needed=$(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
	interpreter=$(readelf -l "$file" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')
	echo "$binary: $(readelf -h "$file" | sed -n 's/.*Type: *//p'); ldd: $(ldd "$file" 2>&1 | tr '\n' ' ')"
	if [[ -z $needed && -z $interpreter ]]; then
		echo "$binary: static: no shared library and no program interpreter needed"
		continue
	fi
	echo "$binary: needs ${needed//$'\n'/, } (interpreter $interpreter)"
	if grep -Eq '^lib(ssl|crypto)\.' <<<"$needed"; then
		die "$binary links the system's OpenSSL, which differs between distributions"
	fi
	newest=$(newest_glibc "$file")
	echo "$binary: newest glibc symbol version GLIBC_${newest:-none}, floor GLIBC_$GLIBC_FLOOR"
	if [[ -n $newest && $(printf '%s\n%s\n' "$newest" "$GLIBC_FLOOR" | sort -V | tail -n1) != "$GLIBC_FLOOR" ]]; then
		die "$binary needs GLIBC_$newest, newer than the floor GLIBC_$GLIBC_FLOOR"
	fi
done

step "licences"
listing=$(tar -xzOf "$archive" THIRD_PARTY_LICENSES)
linked=$(python3 - "$target" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("third_party", "krew/third-party.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
for package in module.shipped_packages(module.metadata(sys.argv[1])):
    print(f"{package['name']} {package['version']}")
PY
)
missing=0
while read -r crate; do
	grep -qxF -- "$crate" <<<"$listing" || grep -qF -- "$crate (" <<<"$listing" || { echo "not in THIRD_PARTY_LICENSES: $crate"; missing=1; }
done <<<"$linked"
((missing == 0)) || die "THIRD_PARTY_LICENSES misses crates the binary links"
echo "THIRD_PARTY_LICENSES names all $(wc -l <<<"$linked") linked crates; $(grep -c '^--- ' <<<"$listing") licence texts, $(wc -c <<<"$listing") bytes"

step "krew manifest and install"
scratch=$(mktemp -d)
trap 'rm -f /tmp/release-check.$$.list; rm -rf "$scratch"' EXIT
KREW_PLATFORMS="$os/$arch" bash krew/render.sh "$version" dist >"$scratch/gitops.yaml"
grep -E '^  version: |sha256: ' "$scratch/gitops.yaml"
krew=$(bash tests/testenv/build-tools.sh | tail -n1)/bin/krew
# krew refuses to run without an index: an empty one, as `krew update` would leave it.
mkdir -p "$scratch/root/index/default/plugins"
git -C "$scratch/root/index/default" init -q -b master
git -C "$scratch/root/index/default" -c user.name=release-check -c user.email=release-check@example.invalid \
	commit -q --allow-empty -m index
KREW_ROOT=$scratch/root HOME=$scratch KREW_NO_UPGRADE_CHECK=1 \
	"$krew" install --no-update-index --manifest="$scratch/gitops.yaml" --archive="$archive" </dev/null
installed=$(PATH="$scratch/root/bin:$PATH" kubectl gitops version --client)
echo "$installed"
grep -q "${version#v}" <<<"$installed" || die "the installed plugin does not report $version"

step "release-check passed: $archive"
