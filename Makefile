# kubectl-gitops: the entry points. `make help` lists them.

PREFIX ?= /usr/local
CARGO ?= cargo
BINARIES := kubectl-gitops kubectl-gitops-install kubectl-gitops-app kubectl-gitops-status \
            kubectl-gitops-upgrade kubectl-gitops-detect kubectl-gitops-artifact kubectl-gitops-component \
            kubectl-gitops-flux kubectl_complete-gitops
TESTENV_BUILD := tests/testenv/build.sh
FLUX_CLI_BUILD := tests/testenv/build-flux-cli.sh
FLUX_PREVIOUS_BUILD := tests/testenv/build-flux-previous.sh

.PHONY: embed-build update-deps help deps deps-check build release install test lint unit-test e2e testenv-build testenv testenv-down demo bench clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

deps: ## Install what is missing (Debian/Ubuntu packages); elsewhere name it and how to get it
	@bash tests/deps.sh install

deps-check: ## Check the prerequisites only (exit 1 and name what is missing)
	@bash tests/deps.sh check

build: ## Build every binary (debug)
	$(CARGO) build --workspace

release: ## Build every binary (release); with KUBECTL_GITOPS_EMBED_FLUX=<flux>, kubectl-gitops-flux carries it
	$(CARGO) build --workspace --release
	if [ -n "$$KUBECTL_GITOPS_EMBED_FLUX" ]; then $(CARGO) build --release -p kubectl-gitops-flux --features embed-flux; fi

install: release ## Install the binaries into $(PREFIX)/bin
	install -d $(DESTDIR)$(PREFIX)/bin
	for b in $(BINARIES); do install -m 0755 target/release/$$b $(DESTDIR)$(PREFIX)/bin/$$b; done

lint: ## Format check and clippy with warnings denied
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

testenv-build: ## Build (once, cached) kube-apiserver, etcd, the Flux controllers, the flux CLI and the previous Flux line's manifests from Go modules
	bash $(TESTENV_BUILD)
	bash $(FLUX_CLI_BUILD)
	bash $(FLUX_PREVIOUS_BUILD)

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

test: deps lint build testenv-build embed-build ## Everything CI runs: lint, unit, CLI snapshot and end-to-end tests
	GITOPS_TESTENV_DIR="$$(bash $(TESTENV_BUILD) | tail -n1)" GITOPS_FLUX_CLI_DIR="$$(bash $(FLUX_CLI_BUILD) | tail -n1)" \
		GITOPS_FLUX_PREVIOUS_DIR="$$(bash $(FLUX_PREVIOUS_BUILD) | tail -n1)" CARGO=$(CARGO) bash tests/run-tests.sh

testenv: deps testenv-build ## Start the local Kubernetes + Flux environment and print `export KUBECONFIG=…`
	@GITOPS_TESTENV_DIR="$$(bash $(TESTENV_BUILD) | tail -n1)" $(CARGO) run -q -p gitops-e2e --bin gitops-testenv -- up

testenv-down: ## Stop the environment `make testenv` started
	@$(CARGO) run -q -p gitops-e2e --bin gitops-testenv -- down

demo: deps build testenv-build ## Run the main job end to end (local environment, or DEMO_CLUSTER=current)
	GITOPS_TESTENV_DIR="$$(bash $(TESTENV_BUILD) | tail -n1)" GITOPS_FLUX_CLI_DIR="$$(bash $(FLUX_CLI_BUILD) | tail -n1)" \
		bash tests/demo.sh

# The bench compares with the real flux CLI that testenv-build builds (cached; about 9 minutes when cold).
bench: deps testenv-build ## status -A vs kubectl get, the LIST floor and flux get (1,000 and 10,000 apps); flux passthrough; artifact push/pull vs flux
	$(CARGO) build -q --release -p kubectl-gitops-status -p kubectl-gitops-flux -p kubectl-gitops-artifact
	$(CARGO) build -q -p gitops-e2e --bin gitops-bench
	GITOPS_TESTENV_DIR="$$(bash $(TESTENV_BUILD) | tail -n1)" GITOPS_FLUX_CLI_DIR="$$(bash $(FLUX_CLI_BUILD) | tail -n1)" \
		target/debug/gitops-bench $(BENCH_SIZES)

update-deps: ## Move dependencies.toml to the Flux release FLUX=vX.Y.Z (needs the internet)
	bash tests/update-deps.sh $(FLUX)

clean: ## Remove build output (the testenv cache stays)
	$(CARGO) clean
