# kubectl-gitops: the entry points. `make help` lists them.

PREFIX ?= /usr/local
CARGO ?= cargo
BINARIES := kubectl-gitops kubectl-gitops-install kubectl-gitops-app kubectl-gitops-status \
            kubectl-gitops-upgrade kubectl-gitops-detect kubectl-gitops-artifact kubectl_complete-gitops
TESTENV_BUILD := tests/testenv/build.sh

.PHONY: help deps deps-check build release install test lint unit-test e2e testenv-build testenv testenv-down demo bench clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

deps: ## Install what is missing (Debian/Ubuntu packages); elsewhere name it and how to get it
	@bash tests/deps.sh install

deps-check: ## Check the prerequisites only (exit 1 and name what is missing)
	@bash tests/deps.sh check

build: ## Build every binary (debug)
	$(CARGO) build --workspace

release: ## Build every binary (release)
	$(CARGO) build --workspace --release

install: release ## Install the binaries into $(PREFIX)/bin
	install -d $(DESTDIR)$(PREFIX)/bin
	for b in $(BINARIES); do install -m 0755 target/release/$$b $(DESTDIR)$(PREFIX)/bin/$$b; done

lint: ## Format check and clippy with warnings denied
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

testenv-build: ## Build (once, cached) kube-apiserver, etcd and the Flux controllers from Go modules
	bash $(TESTENV_BUILD)

test: deps lint build testenv-build ## Everything CI runs: lint, unit, CLI snapshot and end-to-end tests
	GITOPS_TESTENV_DIR="$$(bash $(TESTENV_BUILD) | tail -n1)" CARGO=$(CARGO) bash tests/run-tests.sh

testenv: deps testenv-build ## Start the local Kubernetes + Flux environment and print `export KUBECONFIG=…`
	@GITOPS_TESTENV_DIR="$$(bash $(TESTENV_BUILD) | tail -n1)" $(CARGO) run -q -p gitops-e2e --bin gitops-testenv -- up

testenv-down: ## Stop the environment `make testenv` started
	@$(CARGO) run -q -p gitops-e2e --bin gitops-testenv -- down

demo: deps build testenv-build ## Run the main job end to end (local environment, or DEMO_CLUSTER=current)
	GITOPS_TESTENV_DIR="$$(bash $(TESTENV_BUILD) | tail -n1)" bash tests/demo.sh

# The bench builds the real flux CLI with FLUX_CLI_BUILD (cached; minutes when cold) while it seeds.
bench: deps testenv-build ## status -A (table, -o json) vs kubectl get, the raw LIST floor and flux get, at 1,000 and 10,000 apps
	$(CARGO) build -q --release -p kubectl-gitops-status
	$(CARGO) build -q -p gitops-e2e --bin gitops-bench
	GITOPS_TESTENV_DIR="$$(bash $(TESTENV_BUILD) | tail -n1)" FLUX_CLI_BUILD=tests/testenv/build-flux-cli.sh \
		target/debug/gitops-bench $(BENCH_SIZES)

clean: ## Remove build output (the testenv cache stays)
	$(CARGO) clean
