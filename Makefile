# tessera top-level commands. `make demo` and `make test` do all set-up on a fresh machine.
BUILD ?= build/release
JOBS ?= $(shell nproc)
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1

.PHONY: deps build demo test asan bench bless fuzz format clean

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake --preset release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The demo builds only what it runs: the zellige planner's commands (build/demo, about a
# quarter of the full build), or the full binary when `make build` has already made it.
DEMO_BUILD ?= build/demo
DEMO_ARGS ?= zellige plan --cluster a800x16 --workload v50
demo:
	@bash scripts/install-deps.sh --demo
	@if [ -x $(BUILD)/src/cli/tessera ]; then \
	  cmake --build $(BUILD) --target tessera -j $(JOBS) >/dev/null && \
	  ./$(BUILD)/src/cli/tessera $(DEMO_ARGS); \
	else \
	  echo "make demo: building the zellige planner into $(DEMO_BUILD) (make build builds everything)"; \
	  cmake -S . -B $(DEMO_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	    -DTESSERA_CLI_SYSTEMS=zellige -DTESSERA_CLI_RUNTIME=OFF >/dev/null && \
	  cmake --build $(DEMO_BUILD) --target tessera -j $(JOBS) && \
	  ./$(DEMO_BUILD)/src/cli/tessera $(DEMO_ARGS); \
	fi

# The suite's wall time is printed last (ctest's own "Total Test time" counts test time only).
test: build
	@start=$$(date +%s); \
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS); rc=$$?; \
	echo "make test: wall time $$(( $$(date +%s) - start )) s"; exit $$rc

# Re-bless the golden-output tests (tests/golden/) after an intended output change.
bless: build
	TESSERA_BLESS=1 ctest --test-dir $(BUILD) -R '^golden_|TarotGoldenTraces' --output-on-failure

asan: deps
	@cmake --preset asan >/dev/null
	@cmake --build build/asan -j $(JOBS)
	ctest --test-dir build/asan --output-on-failure -j $(JOBS)

# Seeded fuzzing of the CLI (tests/fuzz/): never crash, never destroy a file.
# `make fuzz FUZZ_CASES=10000 FUZZ_SEED=7`; failures print a command line to rerun each.
FUZZ_CASES ?= 10000
FUZZ_SEED ?= 1
FUZZ_CASE_TIMEOUT_S ?= 20
fuzz: deps
	@cmake --preset release >/dev/null
	@cmake --build $(BUILD) --target tessera tessera_cli_fuzz -j $(JOBS)
	./$(BUILD)/tests/fuzz/tessera_cli_fuzz --bin $(BUILD)/src/cli/tessera --seed $(FUZZ_SEED) \
	  --cases $(FUZZ_CASES) --case-timeout-s $(FUZZ_CASE_TIMEOUT_S)

bench: build
	bash bench/run_all.sh

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf build
