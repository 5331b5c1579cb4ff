# Two commands do all the set-up on a fresh Debian 12 machine:
#   make run    bootstrap, build, inspect + remember the bundled model, say how to open the page
#   make test   bootstrap, build every target, run every suite
# Everything else here is a step of those two.

SHELL := /bin/bash
JOBS ?= 2
BUILD := build
# Debian's emcc needs this, or any -O1+ link fails to find 'acorn' (TOOLCHAIN.md quirk 1).
export NODE_PATH := /usr/share/nodejs
AMN := $(BUILD)/native/amn
MODEL := fixtures/models/tiny-mlp/model.safetensors

.PHONY: run test bootstrap build native wasm aarch64 asan web serve \
        test-native test-install test-asan test-aarch64 test-wasm test-js test-browser fuzz bench bench-js clean

run: bootstrap native wasm web
	@echo; echo "== amn inspect $(MODEL)"
	@$(AMN) inspect $(MODEL)
	@mkdir -p $(BUILD)/run
	@echo; echo "== amn remember $(MODEL) --to bf16"
	@$(AMN) remember $(MODEL) --to bf16 -o $(BUILD)/run/tiny-mlp-bf16.safetensors --force
	@echo; echo "The page is built in web/dist/. Open it with:"
	@echo "    make serve        # then browse http://127.0.0.1:8080/"
	@echo "(or serve web/dist/ with any static server: everything runs in the browser)"

test: bootstrap build test-native test-install test-asan test-aarch64 test-wasm test-js test-browser
	@echo "make test: every suite passed"

bootstrap:
	@tools/bootstrap.sh

build: native asan aarch64 wasm web

native:
	@cmake -S . -B $(BUILD)/native -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	@ninja --quiet -C $(BUILD)/native -j$(JOBS)

asan:
	@cmake -S . -B $(BUILD)/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DAMN_SANITIZE=ON >/dev/null
	@ninja --quiet -C $(BUILD)/asan -j$(JOBS)

aarch64:
	@cmake -S . -B $(BUILD)/aarch64 -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-clang.cmake >/dev/null
	@ninja --quiet -C $(BUILD)/aarch64 -j$(JOBS)

# ctest's emulator under emcmake is a flag Node 20 rejects (TOOLCHAIN.md quirk 3).
wasm:
	@emcmake cmake -S . -B $(BUILD)/wasm -G Ninja -DCMAKE_BUILD_TYPE=Release -DAMN_BUILD_TESTS=ON \
	  "-DCMAKE_CROSSCOMPILING_EMULATOR=/usr/bin/node;--no-experimental-fetch" >/dev/null
	@ninja --quiet -C $(BUILD)/wasm -j$(JOBS)

web: wasm
	@npx vite build web --logLevel warn

serve: web
	@node tools/serve.mjs

test-native: native
	@ctest --test-dir $(BUILD)/native --output-on-failure

# The C++ library as a user gets it: `cmake --install` into a scratch prefix, examples/
# built with find_package and with pkg-config, run on the fixtures (tools/test_install.sh).
test-install: native
	@tools/test_install.sh $(BUILD)

test-asan: asan
	@ctest --test-dir $(BUILD)/asan --output-on-failure

test-aarch64: aarch64
	@ctest --test-dir $(BUILD)/aarch64 --output-on-failure

test-wasm: wasm
	@ctest --test-dir $(BUILD)/wasm --output-on-failure

test-js: native wasm aarch64
	@node --test tests_js/node/ tests_js/cli/

test-browser: web
	@node --test --test-concurrency=1 tests_js/browser/

# Long fuzzing runs (not part of `make test`, which replays the corpora).
FUZZ_SECONDS ?= 600
fuzz:
	@cmake -S . -B $(BUILD)/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAMN_FUZZ=ON \
	  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DAMN_BUILD_TESTS=ON >/dev/null
	@ninja -C $(BUILD)/fuzz -j$(JOBS) $$(cd tests_native/fuzz && ls fuzz_*.cpp | sed 's/\.cpp//')
	@for f in tests_native/fuzz/fuzz_*.cpp; do n=$$(basename $$f .cpp); c=$${n#fuzz_}; \
	  mkdir -p $(BUILD)/fuzz/corpus-$$c; \
	  $(BUILD)/fuzz/tests_native/$$n -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    $(BUILD)/fuzz/corpus-$$c fixtures/fuzz/$$c; done

bench: bootstrap wasm
	@cmake -S . -B $(BUILD)/bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DAMN_BUILD_BENCH=ON >/dev/null
	@ninja --quiet -C $(BUILD)/bench -j$(JOBS)
	@bench/run.sh $(BUILD)/bench

# The npm package against its Node peers (bench/js, docs/benchmarks.md): the peers are
# installed in bench/js only, never for the package or the tests.
bench-js: wasm
	@cd bench/js && npm ci --ignore-scripts --no-audit --no-fund >/dev/null && node open.mjs

clean:
	rm -rf $(BUILD) npm/dist web/dist
