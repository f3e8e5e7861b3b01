# Engram: `make run` installs, generates, builds and starts on :3000; `make test` runs every check CI runs.
SHELL := /bin/bash
NPM_FLAGS := --no-audit --no-fund

.PHONY: install generate check-generated build run lint typecheck test test-cluster bench bench-quality bench-known-item bench-learning bench-poisoning bench-load bench-limits bench-retention bench-peers bench-cluster soak torture clean c-compiler chromium nats-server

node_modules/.installed: package.json package-lock.json
	# `npm ci` refuses the lock file here: the registry lacks some other-platform optional packages
	# (@msgpackr-extract/*), so the lock never lists them. `npm install` honours the lock and leaves it unchanged.
	npm install $(NPM_FLAGS)
	@touch $@

install: node_modules/.installed

generate: install
	npx buf generate

# Generated code is committed; fail when it differs from what `buf generate` produces.
check-generated: generate
	@if [ -n "$$(git status --porcelain -- gen)" ]; then \
		echo "gen/ is out of date with proto/: run 'make generate' and commit gen/"; \
		git status --porcelain -- gen; exit 1; fi

build: generate
	# The server, the OpenAPI document served at /openapi.json and the console's bundle (dist/console).
	node scripts/build.mjs

run: build
	node dist/src/serve.js

lint: install
	npx buf lint
	npx eslint .

typecheck: install
	npx tsc -p tsconfig.json --noEmit
	npx tsc -p console/tsconfig.json --noEmit

# The durability test preloads a small C shim that slows every fsync; it needs a C compiler.
c-compiler:
	@command -v cc >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev; }

# The console's browser test drives Debian's chromium through playwright-core.
chromium:
	@test -x /usr/bin/chromium || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

# The clustered-mode tests start a three-server NATS JetStream cluster on loopback (Debian's nats-server).
nats-server:
	@command -v nats-server >/dev/null || test -x /usr/sbin/nats-server || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server; }

test: check-generated lint typecheck build c-compiler chromium nats-server
	node scripts/run-tests.mjs

# The whole suite again with every test server a one-node cluster on a local nats-server (clustered mode's
# transactions, log, tokens and shard rules under every test).
test-cluster: build c-compiler chromium nats-server
	node scripts/test-cluster.mjs

bench: build
	node --expose-gc bench/run.mjs
	node bench/durable.mjs

bench-quality: build
	node bench/quality.mjs

# Known-item retrieval on real coding-agent messages, tuning and held-out repositories, beside BM25 (about 4 min;
# see BENCHMARKS.md, "Retrieval stages").
bench-known-item: build
	node bench/known-item.mjs

bench-learning: build
	node bench/learning.mjs

# Planted instructions in tool outputs, web pages and documents among honest runs: do they reach later runs as rules or
# lessons (target 0), and do honest lessons still? About 2 minutes (see BENCHMARKS.md, "Memory poisoning").
bench-poisoning: build
	node bench/poisoning.mjs

# 1, 16, 64 and 256 concurrent clients of query and ingest over HTTP and gRPC (about 6 min; see BENCHMARKS.md).
bench-load: build
	node bench/load.mjs

# Per-key rate limits: a polite key's query p99 alone and beside an abusive key, limits on and off (about 2 min).
bench-limits: build
	node bench/rate-limit.mjs

# Clustered mode on loopback: 3 nats-server and 3 Engram nodes beside a standalone server. Writes, replication lag,
# reads over 1, 2 and 3 nodes, a fresh node catching up on CLUSTER_ENTRIES (default 100000) entries (see BENCHMARKS.md).
# The retention purge at 100k entries: purge throughput and query latency while it runs (bench/retention.mjs).
bench-retention: build
	node bench/retention.mjs

bench-cluster: build nats-server
	node bench/cluster.mjs

# Engram beside LanceDB at 20k, 100k and 1M entries (PEERS_SIZES); LanceDB is installed in bench/peers only. `npm ci`
# refuses that lock too (it lists only the Linux x64 builds of LanceDB's native binary); `npm install` keeps it unchanged.
bench/peers/node_modules/.installed: bench/peers/package.json bench/peers/package-lock.json
	cd bench/peers && npm install $(NPM_FLAGS)
	@touch $@

bench-peers: build bench/peers/node_modules/.installed
	node bench/peers/run.mjs

# Mixed load at a fixed rate for SOAK_MINUTES (default 30): memory slope, p99 drift, fds and handles, errors.
soak: build
	node bench/soak.mjs

# The descriptor fuzzer at length: FUZZ_REQUESTS (default 100000) requests, FUZZ_SEED (default random) to repeat a run.
# Then the crash loop: CRASH_KILLS (default 500) SIGKILLs under a mixed write workload, CRASH_SEED to repeat a run.
torture: build
	npx tsc -p bench/torture/tsconfig.json
	node bench/torture/fuzz.mjs
	node bench/torture/crash-loop.mjs

clean:
	rm -rf dist node_modules .vitest-results.json
