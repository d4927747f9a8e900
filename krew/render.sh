#!/usr/bin/env bash
# Render the krew-index manifest for a release from the archives krew/dist.sh wrote, with the
# template krew-release-bot uses (.krew.yaml): `{{ .TagName }}` is the version and each
# `{{ addURIAndSha "URL" .TagName }}` becomes the archive's uri and its sha256 from checksums.txt,
# as the bot renders it from the published release. One template, so the two cannot drift apart.
#
# Usage: krew/render.sh VERSION DIST_DIR > krew/gitops.yaml
#   KREW_PLATFORMS  the platforms to keep, as os/arch words (default: every platform of the
#                   template, each archive required); tests render the host's alone
#   KREW_URL_BASE   where the archives are downloaded from (default: the template's GitHub release)
#
# krew-index rules checked: a v prefix, lowercase sha256 sums, a shortDescription of at most 50
# characters, no description line over 80, `files` and `bin` on every platform.
set -euo pipefail

die() { printf 'krew-manifest: error: %s\n' "$*" >&2; exit 2; }
(($# == 2)) || die "usage: krew/render.sh VERSION DIST_DIR"
[[ $1 =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "version $1 is not vX.Y.Z"
[[ -f $2/checksums.txt ]] || die "$2/checksums.txt is missing: run make dist first"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

VERSION=$1 DIST=$2 TEMPLATE=$here/../.krew.yaml python3 - <<'PY'
import os, re, sys

version, dist = os.environ["VERSION"], os.environ["DIST"]
wanted = os.environ.get("KREW_PLATFORMS", "").split()
url_base = os.environ.get("KREW_URL_BASE")

def die(message):
    print(f"krew-manifest: error: {message}", file=sys.stderr)
    sys.exit(2)

sums = {}
for line in open(os.path.join(dist, "checksums.txt")):
    parts = line.split()
    if len(parts) == 2:
        sums[parts[1]] = parts[0]

template = open(os.environ["TEMPLATE"]).read()
lines = [line for line in template.splitlines() if not line.startswith("#")]
head_end = lines.index("  platforms:") + 1
head, body = lines[:head_end], lines[head_end:]
blocks, current = [], []
for line in body:
    if line.startswith("  - selector:") and current:
        blocks.append(current)
        current = []
    current.append(line)
blocks.append(current)

out = [f"# Rendered by krew/render.sh from .krew.yaml and the {version} archives: do not edit by hand."]
out += [line.replace("{{ .TagName }}", version) for line in head]
kept = set()
for block in blocks:
    text = "\n".join(block)
    platform = "/".join(re.findall(r"^        (?:os|arch): (\S+)$", text, re.M))
    if wanted and platform not in wanted:
        continue
    kept.add(platform)
    for line in block:
        match = re.fullmatch(r'    \{\{ addURIAndSha "(.+)" \.TagName \}\}', line)
        if not match:
            out.append(line)
            continue
        url = match.group(1).replace("{{ .TagName }}", version)
        archive = url.rsplit("/", 1)[1]
        if url_base:
            url = f"{url_base.rstrip('/')}/{archive}"
        digest = sums.get(archive)
        if not digest or not re.fullmatch(r"[0-9a-f]{64}", digest):
            die(f"no sha256 for {archive} in {dist}/checksums.txt: build it with make dist")
        out += [f"    uri: {url}", f"    sha256: {digest}"]
    if "    files:" not in block or not any(line.startswith("    bin: ") for line in block):
        die(f"the {platform} platform of .krew.yaml has no files or bin")
missing = set(wanted) - kept
if missing:
    die(f"no platform {' '.join(sorted(missing))} in .krew.yaml")
short = next(line.split(": ", 1)[1] for line in head if line.startswith("  shortDescription: "))
if len(short) > 50:
    die(f"the shortDescription has {len(short)} characters; krew-index allows 50")
if any(len(line) > 80 + 4 for line in head):
    die("a description line is longer than 80 characters")
print("\n".join(out))
PY
