#!/usr/bin/env bash
# Pack the release archive of one platform, as krew installs it, and record its sha256.
#
# Usage: krew/dist.sh VERSION BIN_DIR OUT_DIR OS ARCH FILE…
#   VERSION   vX.Y.Z (the archive's name carries it)
#   BIN_DIR   where the built binaries are (target/release, or target/<triple>/release)
#   OUT_DIR   where kubectl-gitops_<VERSION>_<OS>_<ARCH>.tar.gz (.zip for windows) is written, and
#             checksums.txt, one `<sha256>  <archive>` line per archive (sha256sum's format)
#   FILE…     the binaries to pack (Makefile's BINARIES), found in BIN_DIR (with .exe on windows);
#             LICENSE, BIN_DIR/THIRD_PARTY_LICENSES (required) and the man pages under
#             BIN_DIR/man (when built) go in too
#
# The archive is flat (krew's manifest maps `kubectl-gitops*` to `.`) and reproducible: sorted
# names, owner 0, the commit's time (SOURCE_DATE_EPOCH), gzip without a name or time.
#
#   DIST_GZIP_LEVEL  gzip's level, 1-9 (default 6, gzip's own). The distribution test packs debug
#                    binaries, twenty times the release's size, and asks for 1.
set -euo pipefail

die() { printf 'dist: error: %s\n' "$*" >&2; exit 2; }
(($# >= 6)) || die "usage: krew/dist.sh VERSION BIN_DIR OUT_DIR OS ARCH FILE…"
version=$1 bin_dir=$2 out_dir=$3 os=$4 arch=$5
shift 5
[[ ${DIST_GZIP_LEVEL:-6} =~ ^[1-9]$ ]] || die "DIST_GZIP_LEVEL ${DIST_GZIP_LEVEL} is not a gzip level 1-9"
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "version $version is not vX.Y.Z"
case $os/$arch in
linux/amd64 | linux/arm64 | darwin/amd64 | darwin/arm64 | windows/amd64) ;;
*) die "unsupported platform $os/$arch" ;;
esac
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
exe=""
[[ $os == windows ]] && exe=.exe

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for file in "$@"; do
	[[ -f $bin_dir/$file$exe ]] || die "$bin_dir/$file$exe is missing: build it first"
	install -m 0755 "$bin_dir/$file$exe" "$stage/$file$exe"
done
install -m 0644 "$root/LICENSE" "$stage/LICENSE"
# The licences of what the binary links (krew/third-party.py; `make dist` writes it).
[[ -f $bin_dir/THIRD_PARTY_LICENSES ]] || die "$bin_dir/THIRD_PARTY_LICENSES is missing: make dist writes it"
install -m 0644 "$bin_dir/THIRD_PARTY_LICENSES" "$stage/THIRD_PARTY_LICENSES"
if [[ -d $bin_dir/man ]]; then
	mkdir -p "$stage/man"
	install -m 0644 "$bin_dir"/man/*.1 "$stage/man/"
fi

mkdir -p "$out_dir"
# Absolute: the archive is written from inside the staging directory (`make dist` passes "dist").
out_dir=$(cd "$out_dir" && pwd)
name=kubectl-gitops_${version}_${os}_${arch}
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)}
if [[ $os == windows ]]; then
	archive=$name.zip
	find "$stage" -exec touch -h -d "@$epoch" {} +
	rm -f "$out_dir/$archive.tmp"
	out=$out_dir/$archive.tmp
	if command -v zip >/dev/null; then
		(cd "$stage" && find . -type f | LC_ALL=C sort | sed 's#^\./##' | zip -q -X -@ "$out")
	elif command -v 7z >/dev/null; then # GitHub's Windows runners have 7-Zip, not zip
		(cd "$stage" && 7z a -tzip -bd -bso0 "$out" .)
	else
		die "neither zip nor 7z found (Debian package zip)"
	fi
else
	archive=$name.tar.gz
	# GNU tar's flags (macOS's bsdtar has no --mtime): gtar where tar is another one.
	gnu_tar=tar
	if ! tar --version 2>/dev/null | grep -q 'GNU tar'; then
		command -v gtar >/dev/null || die "GNU tar is needed (macOS: brew install gnu-tar)"
		gnu_tar=gtar
	fi
	(cd "$stage" && find . -type f | LC_ALL=C sort | sed 's#^\./##' |
		"$gnu_tar" --owner=0 --group=0 --numeric-owner --mtime="@$epoch" --no-recursion -cf - -T - |
		gzip "-${DIST_GZIP_LEVEL:-6}" -n >"$out_dir/$archive.tmp")
fi
mv -f "$out_dir/$archive.tmp" "$out_dir/$archive"

sum=$(cd "$out_dir" && sha256sum "$archive")
touch "$out_dir/checksums.txt"
{ grep -v "  $archive\$" "$out_dir/checksums.txt" || true; echo "$sum"; } | LC_ALL=C sort -k2 >"$out_dir/checksums.txt.tmp"
mv -f "$out_dir/checksums.txt.tmp" "$out_dir/checksums.txt"
printf '%s\n' "$out_dir/$archive"
