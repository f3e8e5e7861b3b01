# Engram: `make run` installs, generates, builds and starts on :3000; `make test` runs every check CI runs.
SHELL := /bin/bash
NPM_FLAGS := --no-audit --no-fund

.PHONY: install generate check-generated build run lint typecheck test bench bench-quality bench-learning clean c-compiler chromium

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

test: check-generated lint typecheck build c-compiler chromium
	node scripts/run-tests.mjs

bench: build
	node --expose-gc bench/run.mjs
	node bench/durable.mjs

bench-quality: build
	node bench/quality.mjs

bench-learning: build
	node bench/learning.mjs

clean:
	rm -rf dist node_modules .vitest-results.json
