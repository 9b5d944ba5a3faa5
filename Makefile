# Chain Studio. `make test` is what CI runs (.ci/run); it installs what it needs.
GO ?= go
PKGS := ./...

.PHONY: test vet vuln vuln-local unit short race e2e screenshots bench bench-cluster generate run fuzz build

# The state of the tracked files (empty outside a git checkout): the tests
# must leave it as they found it.
TRACKED_STATE = if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
	  git status --porcelain --untracked-files=no; git diff HEAD --binary 2>/dev/null | cksum; fi

test:
	@before=$$($(TRACKED_STATE)); \
	  $(MAKE) --no-print-directory vet vuln-local unit e2e || exit $$?; \
	  after=$$($(TRACKED_STATE)); \
	  if [ "$$before" != "$$after" ]; then \
	    echo "make test: the tests changed tracked files (they must not; README pictures are 'make screenshots'):"; \
	    git status --porcelain --untracked-files=no; exit 1; \
	  fi
	@echo "make test: all checks passed"

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

# Known vulnerabilities reachable from our code, in the dependencies and the
# standard library (govulncheck, pinned in go.mod as a tool). `make vuln`
# reads the database at GOVULNDB (default https://vuln.go.dev, a public name
# looked up on purpose); `make test` runs it only when GOVULNDB names a local
# copy (file:///path), so that the tests look up no public name.
GOVULNDB ?= https://vuln.go.dev
vuln:
	$(GO) tool govulncheck -db "$(GOVULNDB)" ./...

vuln-local:
	@case "$(GOVULNDB)" in \
	  file://*) $(MAKE) --no-print-directory vuln ;; \
	  *) echo "vuln: skipped (make test looks up no public name; GOVULNDB=file:///path/to/vulndb checks against a local copy, make vuln against vuln.go.dev)" ;; \
	esac

# Unit and integration tests, with the race detector (25 minutes a package:
# web's suite under -race takes over the default 10 on 2 cores). Fuzz corpora under
# testdata/fuzz are replayed as ordinary tests. scripts/postgres.sh makes
# sure a PostgreSQL answers on loopback (starting or installing it) for the
# PostgreSQL backend's tests and prints the URL they use.
unit:
	@# cmd/studio's MCP test runs the npm reference server (server-everything)
	@if [ ! -d node_modules/@modelcontextprotocol/server-everything ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then \
	  npm ci --no-audit --no-fund --loglevel=error; fi
	@dsn=$$(bash scripts/postgres.sh) || exit $$?; \
	  echo "STUDIO_TEST_PG=$$dsn $(GO) test -race -count=1 -timeout 25m $(PKGS)"; \
	  STUDIO_TEST_PG="$$dsn" $(GO) test -race -count=1 -timeout 25m $(PKGS)

# The inner loop while editing: every package's tests with -short, which
# skips the slow ones (child processes killed mid-run, the README commands
# against a built binary, the load test, the fault-timeout test); well under
# 15 s. No race detector, no cache bypass: `make test` runs everything.
short:
	$(GO) test -short $(PKGS)

# Browser tests of the designer (Playwright + Debian Chromium); installs
# Chromium and the npm devDependencies when missing. See scripts/e2e.sh.
e2e:
	GO=$(GO) bash scripts/e2e.sh

# The README pictures (docs/screenshots/*.png): the browser tests, run with
# their screenshots written there. Nothing else writes into docs/.
screenshots:
	GO=$(GO) bash scripts/e2e.sh --screenshots

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./engine/ ./engine/expr/ ./store/sqlite/

# The cluster's benchmarks: studio serve/worker processes on PostgreSQL
# (scripts/postgres.sh finds or starts it): distribution of 2,000 runs over
# 1, 2 and 4 workers, and the live latency of a watcher on another process.
# About 5 minutes; figures in docs/benchmarks.md.
bench-cluster:
	@dsn=$$(bash scripts/postgres.sh) || exit $$?; \
	  STUDIO_TEST_PG="$$dsn" $(GO) test -run '^$$' -bench 'Cluster' -benchtime 1x -count=1 -timeout 30m ./cmd/studio/

# Each fuzz target for FUZZTIME (default 5 minutes).
FUZZTIME ?= 5m
fuzz:
	$(GO) test ./engine/expr -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./engine/expr -run '^$$' -fuzz '^FuzzEval$$' -fuzztime $(FUZZTIME)
	$(GO) test ./engine -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	$(GO) test ./engine -run '^$$' -fuzz '^FuzzValidate$$' -fuzztime $(FUZZTIME)
	$(GO) test ./engine/a2e -run '^$$' -fuzz '^FuzzA2EMessage$$' -fuzztime $(FUZZTIME)
	$(GO) test ./engine/agent -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./engine/agent -run '^$$' -fuzz '^FuzzSchema$$' -fuzztime $(FUZZTIME)

generate:
	$(GO) tool templ generate

build:
	$(GO) build -o studio ./cmd/studio

run:
	$(GO) run ./cmd/studio
