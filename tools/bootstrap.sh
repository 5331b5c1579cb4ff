#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test anamnesis, and
# nothing twice: Debian packages (apt-get), then the npm devDependencies (npm ci).
set -euo pipefail
cd "$(dirname "$0")/.."

# Every Debian package the build, the tests and `make run` use, with why.
packages=(
  g++ cmake ninja-build make      # native build
  libhwy-dev                      # Highway SIMD (runtime dispatch on x86-64)
  catch2                          # unit tests (header-only)
  libcli11-dev                    # the native CLI's argument parser
  libxxhash-dev                   # XXH64 for amn hash (header, inlined; native and WASM)
  emscripten binaryen             # the WASM module (emcc 3.1.6)
  clang-14 lld-14 qemu-user g++-aarch64-linux-gnu  # aarch64 cross build, run under qemu
  libclang-rt-14-dev              # clang's sanitizer + libFuzzer runtimes (make fuzz)
  chromium                        # browser tests of the page (playwright-core drives it)
  strace                          # the --no-sync tests count fsync calls
  pkg-config                      # make test-install builds an example from anamnesis.pc
  time                            # the forget memory test reads GNU time's peak RSS (%M)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "bootstrap: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    SUDO=sudo
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Vite 8 needs Node >= 20.19; Debian 12's own nodejs is 18.
if ! command -v node >/dev/null; then
  echo "bootstrap: Node.js >= 20.19 is required (Debian 12's nodejs 18 is too old for Vite 8)." >&2
  exit 1
fi
if ! node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=19)?0:1)'; then
  echo "bootstrap: Node.js >= 20.19 is required; this machine has $(node --version)." >&2
  echo "           Install a newer Node (Debian 12's nodejs 18 is too old for Vite 8) and re-run." >&2
  exit 1
fi

# npm ci only when the lockfile changed since the last install.
if [ ! -f node_modules/.amn-stamp ] || [ package-lock.json -nt node_modules/.amn-stamp ]; then
  echo "bootstrap: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  touch node_modules/.amn-stamp
fi
