# gatehouse: `make run` for a local instance, `make test` for the whole suite.
GO ?= go
GOTESTFLAGS ?=

.PHONY: run stop reset test deps build image bench vet fuzz soak

run:
	deploy/local/run.sh

# stop stops the local PostgreSQL `make run` started (Ctrl-C stops the rest),
# also as root, and fails if it is still running afterwards; reset stops it
# and then deletes .data/ (database, sessions, the local encryption key), and
# deletes nothing while a server still runs there (deploy/local/pg.sh).
stop:
	deploy/local/pg.sh stop

reset:
	deploy/local/pg.sh reset

build:
	mkdir -p bin && $(GO) build -o bin/gatehouse ./cmd/gatehouse

# image builds the OCI image without a Docker daemon or a base image
# (deploy/image): bin/image/oci (OCI layout) and bin/image/gatehouse.tar.
image:
	$(GO) run ./deploy/image -out bin/image $(IMAGEFLAGS)

# deps installs and fetches every real component the tests start
# (PostgreSQL must be installed; Kafka jars, Chromium and promtool are fetched here).
deps:
	deploy/local/deps.sh

vet:
	$(GO) vet ./...

# The whole suite, under the race detector; how long it takes is stated once,
# in README.md ("The two commands").
test: deps vet
	$(GO) test -race -count=1 -timeout 25m $(GOTESTFLAGS) ./...

fuzz:
	deploy/local/fuzz.sh

bench: deps
	deploy/bench/bench.sh

# soak runs the combined chaos soak (100 000 events under random process,
# broker and PostgreSQL faults) and prints its invariants table; a short
# version runs inside `make test` (deploy/soak, TestSoakShort).
soak: deps
	$(GO) run ./deploy/soak $(SOAKFLAGS)
