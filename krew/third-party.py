#!/usr/bin/env python3
"""THIRD_PARTY_LICENSES of the release binary, for the archive beside our LICENSE.

Usage: krew/third-party.py [TARGET] > THIRD_PARTY_LICENSES
  TARGET  the Rust target triple the release is built for (default: this machine's)

Every crate linked into kubectl-gitops for TARGET (cargo metadata's resolve from the
kubectl-gitops package, normal dependencies only: build scripts and proc macros run at build
time and are not shipped), with its version, licence expression, repository and the licence
texts its package carries. Crates that vendor C libraries (`*-sys`, `*-src`: libgit2, libssh2,
OpenSSL, zlib) also carry those libraries' own licence files a level or two down. Then the Rust
standard library, and musl's copyright for a static musl build.
"""

import json
import os
import re
import subprocess
import sys

ROOT_PACKAGE = "kubectl-gitops"
LICENCE_FILE = re.compile(r"^(licen[cs]e|copying|notice|copyright)([-_.].*)?$", re.IGNORECASE)
# Where vendored C sources keep their licence, below the crate's directory (depth 1 and 2), and
# which directories under them are never a vendored library's licence.
VENDORED_DEPTH = 2
NOT_VENDORED = {"tests", "test", "doc", "docs", "examples", "benches", "fuzz"}


def die(message):
    print(f"third-party: error: {message}", file=sys.stderr)
    sys.exit(2)


def host_target():
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("host: "))


def metadata(target):
    command = ["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", target]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        die(f"{' '.join(command)} failed:\n{result.stderr.strip()}")
    return json.loads(result.stdout)


def shipped_packages(meta):
    """The packages linked into ROOT_PACKAGE: its normal dependencies, transitively, without
    proc macros (they run in the compiler) and without the workspace's own crates."""
    packages = {package["id"]: package for package in meta["packages"]}
    nodes = {node["id"]: node for node in meta["resolve"]["nodes"]}
    members = set(meta["workspace_members"])
    root = next((id for id, package in packages.items() if package["name"] == ROOT_PACKAGE and id in members), None)
    if root is None:
        die(f"no workspace package {ROOT_PACKAGE}")
    seen, stack = set(), [root]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        for dep in nodes[current]["deps"]:
            package = packages[dep["pkg"]]
            normal = any(kind["kind"] is None for kind in dep["dep_kinds"])
            # openssl-src: a build dependency whose C library the build links in.
            vendored = package["name"].endswith("-src") and any(kind["kind"] == "build" for kind in dep["dep_kinds"])
            proc_macro = any("proc-macro" in target["kind"] for target in package["targets"])
            if (normal or vendored) and not proc_macro:
                stack.append(dep["pkg"])
    shipped = [packages[id] for id in seen if id not in members]
    return sorted(shipped, key=lambda package: (package["name"], package["version"]))


def licence_files(package):
    directory = os.path.dirname(package["manifest_path"])
    found = [os.path.join(directory, name) for name in sorted(os.listdir(directory)) if LICENCE_FILE.match(name)]
    if re.search(r"-(sys|src)$", package["name"]):
        found += vendored_licence_files(directory)
    return [path for path in found if os.path.isfile(path)]


def vendored_licence_files(directory):
    found = []
    for current, subdirectories, files in os.walk(directory):
        depth = os.path.relpath(current, directory).count(os.sep) + 1
        subdirectories[:] = sorted(d for d in subdirectories if d.lower() not in NOT_VENDORED and depth < VENDORED_DEPTH)
        if current != directory:
            found += [os.path.join(current, name) for name in sorted(files) if LICENCE_FILE.match(name)]
    return found


def standard_texts(licence, texts):
    """For a package that carries no licence text: the standard text of each licence its
    expression names, from the licence texts the Rust distribution ships."""
    names = re.findall(r"[A-Za-z0-9.-]+", licence.replace("/", " OR "))
    return [os.path.join(texts, f"{name}.txt") for name in names if os.path.isfile(os.path.join(texts, f"{name}.txt"))]


def section(title, licence, source, paths, base):
    lines = ["=" * 100, title, f"License: {licence}"]
    if source:
        lines.append(f"Source: {source}")
    if not paths:
        lines.append("(The package carries no licence text, nor does any standard text match its licence expression.)")
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as text:
            body = text.read().rstrip()
        lines += ["", f"--- {os.path.relpath(path, base)} ---", "", body]
    return "\n".join(lines) + "\n\n"


def main():
    target = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else host_target()
    packages = shipped_packages(metadata(target))
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True, check=True).stdout.strip()
    texts = os.path.join(sysroot, "share", "doc", "rust", "licenses")
    out = [
        f"Third-party software in kubectl-gitops (built for {target}).\n"
        f"kubectl-gitops itself is under the licence in LICENSE. It links the {len(packages)} crates below,\n"
        "the Rust standard library" + (" and musl" if "musl" in target else "") + ", each under its own licence.\n\n"
    ]
    for package in packages:
        directory = os.path.dirname(package["manifest_path"])
        licence = package.get("license") or (f"see {package['license_file']}" if package.get("license_file") else "not declared")
        own = licence_files(package)
        if own:
            out.append(section(f"{package['name']} {package['version']}", licence, package.get("repository"), own, directory))
        else:
            standard = standard_texts(licence, texts)
            title = f"{package['name']} {package['version']}" + (" (its package carries no licence text: the standard text follows)" if standard else "")
            out.append(section(title, licence, package.get("repository"), standard, texts))
    std_paths = [os.path.join(texts, name) for name in ("MIT.txt", "Apache-2.0.txt") if os.path.isfile(os.path.join(texts, name))]
    out.append(section("The Rust standard library", "MIT OR Apache-2.0", "https://github.com/rust-lang/rust", std_paths, texts))
    if "musl" in target:
        copyright = "/usr/share/doc/musl/copyright"
        out.append(section("musl libc (linked statically)", "MIT", "https://musl.libc.org/", [copyright] if os.path.isfile(copyright) else [], os.path.dirname(copyright)))
    sys.stdout.write("".join(out))


if __name__ == "__main__":
    main()
