# kubectl-gitops: the entry points. `make help` lists them.

PREFIX ?= /usr/local
CARGO ?= cargo
# What a release ships and `make install` installs: the one binary that runs every command, and
# the completion shim kubectl runs for `kubectl gitops <TAB>` (docs/ARCHITECTURE.md, "Layout notes").
BINARIES := kubectl-gitops kubectl_complete-gitops
# The commands with a man page of their own, kubectl-gitops-<command>.1 (flux is flux's own CLI).
MAN_COMMANDS := install app status upgrade detect diff drift fleet promote artifact component ui mcp metrics tenant monitoring platform pr repo
MAN_PAGES := kubectl-gitops $(addprefix kubectl-gitops-,$(MAN_COMMANDS))
# Which profile's build `man` and `install-files` take their binaries from (release or debug).
PROFILE ?= release
BASH_COMPLETION_DIR = $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSH_COMPLETION_DIR = $(DESTDIR)$(PREFIX)/share/zsh/site-functions
FISH_COMPLETION_DIR = $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
MAN_DIR = $(DESTDIR)$(PREFIX)/share/man/man1
TESTENV_BUILD := tests/testenv/build.sh
FLUX_CLI_BUILD := tests/testenv/build-flux-cli.sh
FLUX_PREVIOUS_BUILD := tests/testenv/build-flux-previous.sh
TOOLS_BUILD := tests/testenv/build-tools.sh
GITEA_BUILD := tests/testenv/build-gitea.sh
NPM_BUILD := tests/testenv/build-npm.sh
PYPI_BUILD := tests/testenv/build-pypi.sh
# The release: VERSION (default: the workspace's), for DIST_OS/DIST_ARCH (default: this machine).
VERSION ?= v$(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
DIST_OS ?= $(shell uname -s | tr A-Z a-z)
DIST_ARCH ?= $(shell uname -m | sed -e s/x86_64/amd64/ -e s/aarch64/arm64/)
EXE := $(if $(filter windows,$(DIST_OS)),.exe,)
# A Linux release is one static binary (musl, OpenSSL built in): it runs on any Linux whatever its
# glibc or libssl (docs/release.md). Elsewhere the host's own target.
DIST_TARGET ?= $(if $(filter linux,$(DIST_OS)),$(if $(filter arm64,$(DIST_ARCH)),aarch64,x86_64)-unknown-linux-musl,)
DIST_BIN_DIR := target/$(if $(DIST_TARGET),$(DIST_TARGET)/,)release
# Which build `man` and `install-files` take their binaries from.
BIN_DIR ?= target/$(PROFILE)
# Where `make man` writes the pages (`make dist` packs them from there); the install test points
# it at a directory of its own.
MAN_BUILD_DIR ?= $(BIN_DIR)/man

.PHONY: man install-files uninstall dist-build dist release-check krew-manifest embed-build update-deps help deps deps-check build release install ui-screenshots test-build test-prepare-rust test lint lint-rust actionlint unit-test e2e testenv-build testenv-core testenv testenv-down demo demo-sockshop bench clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

deps: ## Install what is missing (Debian/Ubuntu packages); elsewhere name it and how to get it
	@bash tests/deps.sh install

deps-check: ## Check the prerequisites only (exit 1 and name what is missing)
	@bash tests/deps.sh check

build: ## Build every binary (debug)
	$(CARGO) build --workspace

release: ## Build the release binaries (kubectl-gitops runs every command); with KUBECTL_GITOPS_EMBED_FLUX=<flux>, it carries that flux CLI
	$(CARGO) build --release -p kubectl-gitops $${KUBECTL_GITOPS_EMBED_FLUX:+--features embed-flux}

man: ## Man pages (each command prints its own: kubectl-gitops [COMMAND] __man) into $(MAN_BUILD_DIR)
	mkdir -p $(MAN_BUILD_DIR)
	$(BIN_DIR)/kubectl-gitops$(EXE) __man >$(MAN_BUILD_DIR)/kubectl-gitops.1
	for c in $(MAN_COMMANDS); do $(BIN_DIR)/kubectl-gitops$(EXE) $$c __man >$(MAN_BUILD_DIR)/kubectl-gitops-$$c.1; done

dist-build: ## The release build of what an archive ships, for DIST_TARGET (Linux: static musl)
	@# A fresh machine has the host's Rust target only: add DIST_TARGET's (make bench needs it too).
	@if [ -n "$(DIST_TARGET)" ] && command -v rustup >/dev/null && ! rustup target list --installed | grep -qx "$(DIST_TARGET)"; then \
		echo "dist: adding the Rust target $(DIST_TARGET)" >&2; rustup target add $(DIST_TARGET); fi
	@case "$(DIST_TARGET)" in *-musl) command -v musl-gcc >/dev/null || { echo "dist: error: musl-gcc not found: the static build needs it (Debian package musl-tools)" >&2; exit 2; };; esac
	$(CARGO) build --release -p kubectl-gitops $(if $(DIST_TARGET),--target $(DIST_TARGET)) $${KUBECTL_GITOPS_EMBED_FLUX:+--features embed-flux}

dist: dist-build ## The release archive of this platform (kubectl-gitops_<VERSION>_<os>_<arch>.tar.gz) and dist/checksums.txt
	$(MAKE) --no-print-directory man BIN_DIR=$(DIST_BIN_DIR)
	python3 krew/third-party.py $(DIST_TARGET) >$(DIST_BIN_DIR)/THIRD_PARTY_LICENSES.tmp
	mv $(DIST_BIN_DIR)/THIRD_PARTY_LICENSES.tmp $(DIST_BIN_DIR)/THIRD_PARTY_LICENSES
	bash krew/dist.sh $(VERSION) $(DIST_BIN_DIR) dist $(DIST_OS) $(DIST_ARCH) $(BINARIES)

release-check: ## Everything a release job runs that can run here, for VERSION: dist, linkage, licences, size, manifest, krew install
	bash krew/release-check.sh $(VERSION) $(DIST_OS) $(DIST_ARCH) $(DIST_BIN_DIR)

krew-manifest: ## krew/gitops.yaml for VERSION from the archives in dist/ (every platform, real sha256 sums)
	bash krew/render.sh $(VERSION) dist >krew/gitops.yaml.tmp
	mv krew/gitops.yaml.tmp krew/gitops.yaml

install: release ## Install the binaries, the completion shim, bash/zsh/fish completions and man pages into $(PREFIX)
	$(MAKE) --no-print-directory install-files PROFILE=release

install-files: man ## What install copies, from $(BIN_DIR), without building
	install -d $(DESTDIR)$(PREFIX)/bin $(MAN_DIR) $(BASH_COMPLETION_DIR) $(ZSH_COMPLETION_DIR) $(FISH_COMPLETION_DIR)
	for b in $(BINARIES); do install -m 0755 $(BIN_DIR)/$$b $(DESTDIR)$(PREFIX)/bin/$$b; done
	for p in $(MAN_PAGES); do install -m 0644 $(MAN_BUILD_DIR)/$$p.1 $(MAN_DIR)/$$p.1; done
	$(BIN_DIR)/kubectl-gitops completion bash >$(BASH_COMPLETION_DIR)/kubectl-gitops
	$(BIN_DIR)/kubectl-gitops completion zsh >$(ZSH_COMPLETION_DIR)/_kubectl-gitops
	$(BIN_DIR)/kubectl-gitops completion fish >$(FISH_COMPLETION_DIR)/kubectl-gitops.fish

uninstall: ## Remove exactly what install installed from $(PREFIX)
	for b in $(BINARIES); do rm -f $(DESTDIR)$(PREFIX)/bin/$$b; done
	for p in $(MAN_PAGES); do rm -f $(MAN_DIR)/$$p.1; done
	rm -f $(BASH_COMPLETION_DIR)/kubectl-gitops $(ZSH_COMPLETION_DIR)/_kubectl-gitops $(FISH_COMPLETION_DIR)/kubectl-gitops.fish

lint: lint-rust actionlint ## Format check, clippy with warnings denied, actionlint on .github/workflows

lint-rust: ## Format check and clippy with warnings denied
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

actionlint: ## actionlint on .github/workflows (built from its Go module with the other test tools)
	"$$(bash $(TOOLS_BUILD) | tail -n1)/bin/actionlint" -no-color

testenv-build: ## Build (once, cached) kube-apiserver, etcd, the Flux controllers, the flux CLI, the previous Flux line's manifests, krew, actionlint, Prometheus, kube-state-metrics and Gitea from Go modules, the npm packages the browser tests inject (axe-core) and the PyPI packages the MCP tests drive the server with (mcp)
	bash $(TESTENV_BUILD)
	bash $(FLUX_CLI_BUILD)
	bash $(FLUX_PREVIOUS_BUILD)
	bash $(TOOLS_BUILD)
	bash $(GITEA_BUILD)
	bash $(NPM_BUILD)
	bash $(PYPI_BUILD)

# The embed-flux build of kubectl-gitops-flux, with the flux CLI testenv-build built compiled in, and
# the same package built without it, side by side in target/debug/embed-flux/ (embedded, plain: the
# tests compare the two; a build of one package unifies the dependencies' features apart from the
# workspace build). Not beside the plugins, where the dispatcher would list them as commands. The
# workspace build then puts the usual kubectl-gitops-flux back; its artifacts are still fresh.
embed-build: build testenv-build ## kubectl-gitops-flux with the flux CLI inside (target/debug/embed-flux/embedded)
	mkdir -p target/debug/embed-flux
	$(CARGO) build -p kubectl-gitops-flux
	cp target/debug/kubectl-gitops-flux target/debug/embed-flux/plain
	KUBECTL_GITOPS_EMBED_FLUX="$$(bash $(FLUX_CLI_BUILD) | tail -n1)/bin/flux" $(CARGO) build -p kubectl-gitops-flux --features embed-flux
	cp target/debug/kubectl-gitops-flux target/debug/embed-flux/embedded
	$(CARGO) build --workspace

test-build: ## Compile every test target (the build half of `make test`; its test phase only runs them)
	$(CARGO) test --workspace --all-targets --no-run

# The Rust half and the Go half of what the tests need, side by side: each keeps both cores busy most
# of the time, but downloads, links and serial stretches leave room for the other (a cold `.ci/run`
# is mostly these builds). Each half runs its own steps in order.
test-prepare-rust:
	$(MAKE) --no-print-directory lint-rust
	$(MAKE) --no-print-directory build
	$(MAKE) --no-print-directory test-build

# Where the tests find what testenv-build built (each script prints its cached directory).
TESTENV_DIRS = GITOPS_TESTENV_DIR="$$(bash $(TESTENV_BUILD) | tail -n1)" GITOPS_FLUX_CLI_DIR="$$(bash $(FLUX_CLI_BUILD) | tail -n1)" \
	GITOPS_FLUX_PREVIOUS_DIR="$$(bash $(FLUX_PREVIOUS_BUILD) | tail -n1)" GITOPS_TOOLS_DIR="$$(bash $(TOOLS_BUILD) | tail -n1)" \
	GITOPS_GITEA_DIR="$$(bash $(GITEA_BUILD) | tail -n1)" GITOPS_NPM_DIR="$$(bash $(NPM_BUILD) | tail -n1)" \
	GITOPS_PYPI_DIR="$$(bash $(PYPI_BUILD) | tail -n1)"

test: deps ## Everything CI runs: lint, unit, CLI snapshot and end-to-end tests
	$(MAKE) --no-print-directory -j2 test-prepare-rust testenv-build
	$(MAKE) --no-print-directory actionlint embed-build test-build
	$(TESTENV_DIRS) CARGO=$(CARGO) bash tests/run-tests.sh

# The views docs/ui.md shows: the browser tests' screenshots of them (light, and `-dark`).
UI_VIEWS := apps-suspended app-graph app-log graph graph-depends-on app-ready app-failing events app-history app-timeline add-form add-plan add-pull-request pull-request fleet fleet-promote-plan
ui-screenshots: deps build testenv-build ## Take the screenshots docs/ui.md shows, light and dark, with the browser tests (headless Chromium) into docs/images
	$(TESTENV_DIRS) $(CARGO) test -p gitops-e2e --test it -- browser:: rollback:: fleet::
	for view in $(UI_VIEWS); do for theme in "" -dark; do \
		cp "target/ui-screenshots/$$view$$theme.png" "docs/images/ui-$$view$$theme.png" || exit 1; done; done

testenv: deps testenv-core ## Start the local Kubernetes + Flux environment and print `export KUBECONFIG=…`
	@GITOPS_TESTENV_DIR="$$(bash $(TESTENV_BUILD) | tail -n1)" $(CARGO) run -q -p gitops-e2e --bin gitops-testenv -- up

testenv-down: ## Stop the environment `make testenv` started
	@$(CARGO) run -q -p gitops-e2e --bin gitops-testenv -- down

# What `make demo` and `make testenv` need of the Go builds: the environment and the flux CLI, not
# what only the tests use (krew, actionlint, Prometheus, kube-state-metrics, Gitea, the previous
# Flux line).
testenv-core: ## Build (once, cached) kube-apiserver, etcd, the Flux controllers and the flux CLI

	bash $(TESTENV_BUILD)
	bash $(FLUX_CLI_BUILD)

demo: deps build testenv-core ## Run the main job end to end (local environment, or DEMO_CLUSTER=current)
	GITOPS_TESTENV_DIR="$$(bash $(TESTENV_BUILD) | tail -n1)" GITOPS_FLUX_CLI_DIR="$$(bash $(FLUX_CLI_BUILD) | tail -n1)" \
		bash tests/demo.sh

demo-sockshop: deps build testenv-core ## The sock shop demo through a real Gitea: repo from upstream, app add --pr, pr merge, wait (docs/examples/sock-shop.md)
	$(CARGO) build -q -p gitops-e2e --bin gitops-testenv
	GITOPS_TESTENV_DIR="$$(bash $(TESTENV_BUILD) | tail -n1)" GITOPS_FLUX_CLI_DIR="$$(bash $(FLUX_CLI_BUILD) | tail -n1)" \
		GITOPS_GITEA_DIR="$$(bash $(GITEA_BUILD) | tail -n1)" bash tests/demo-sockshop.sh

# The bench compares with the real flux CLI that testenv-build builds (cached; about 9 minutes when cold).
# It measures the release build and the archive `make dist` packs (the size budgets).
bench: deps testenv-build dist ## status -A vs kubectl get, the LIST floor and flux get (1,000 and 10,000 apps); start-up, detect and size budgets; flux passthrough; artifact push/pull vs flux; diff vs flux diff (101 Kustomizations); drift -A vs flux diff (1,000 × 20 objects); fleet status vs status -A (10 clusters × 1,000 apps)
	# The rows time each command's own release binary too (the one binary runs the same code).
	$(CARGO) build -q --release --workspace
	$(CARGO) build -q -p gitops-e2e --bin gitops-bench
	GITOPS_TESTENV_DIR="$$(bash $(TESTENV_BUILD) | tail -n1)" GITOPS_FLUX_CLI_DIR="$$(bash $(FLUX_CLI_BUILD) | tail -n1)" \
		BENCH_ARCHIVE=dist/kubectl-gitops_$(VERSION)_$(DIST_OS)_$(DIST_ARCH).tar.gz target/debug/gitops-bench $(BENCH_SIZES)

update-deps: ## Move dependencies.toml to the Flux release FLUX=vX.Y.Z (needs the internet)
	bash tests/update-deps.sh $(FLUX)

clean: ## Remove build output (the testenv cache stays)
	$(CARGO) clean
