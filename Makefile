# The one test command (README "Set up", .ci/run): vet, unit and interop
# tests, then a short fuzz run of every Fuzz target in the module.
#
#   make test                 everything (what CI runs)
#   make unit                 go test only
#   make fuzz FUZZTIME=30s    longer fuzzing (a duration or a count, Nx)
#
# Interop tests need tshark and /usr/bin/python3 with scapy; with CI=true they
# fail instead of skipping when either is missing.

GO       ?= go
TIMEOUT  ?= 15m
# A count of executions, not a duration: with a duration, go1.26's fuzz
# coordinator can report its own deadline as a failure ("context deadline
# exceeded", no crasher written) when a loaded machine delays a worker at
# the end (golang/go#75804, fixed in go1.27). A count has no deadline. At
# 20000 the slowest target (a simulator-backed one) takes seconds.
FUZZTIME ?= 20000x
# Minimising a new input re-runs it many times; a simulator-backed target can
# spend minutes there. Bound it so a short run stays short.
FUZZMIN  ?= 2s

.PHONY: test vet unit fuzz

test: vet unit fuzz

vet:
	$(GO) vet ./...

unit:
	$(GO) test -timeout $(TIMEOUT) ./...

# Fuzz targets are discovered, never listed by hand: `go test -fuzz` accepts
# one package and one target per run, so each (package, target) pair gets its
# own short run. A new Fuzz function is picked up without editing this file.
fuzz:
	@set -e; \
	for pkg in $$($(GO) list ./...); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz $$pkg $$target ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMIN) $$pkg; \
		done; \
	done
