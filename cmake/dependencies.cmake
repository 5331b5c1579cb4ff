# Third-party parts, found the same way for every target.
#  - simdjson: the amalgamated simdjson.cpp/.h shipped in npm's @nozbe/simdjson 3.9.4
#    (installed by `npm ci`), so native and WASM compile the very same source.
#  - Highway (apt libhwy-dev 1.0.3): on x86-64 linked for runtime dispatch; on aarch64
#    and WASM used header-only with static dispatch.
#  - Catch2 v2 and CLI11 (apt): header-only.
#  - zlib 1.3.1 (inflate only) from npm's zlib-sync: cmake/zlib.cmake.
#  - xxHash (apt libxxhash-dev 0.8.1): its header, inlined (XXH_INLINE_ALL) by
#    src/core/digest.cpp, so native and WASM run the same XXH64.
# Cross builds must not see the host's /usr/include (TOOLCHAIN.md quirk 4), so the
# header-only parts are copied into the build tree and included from there.

set(AMN_SIMDJSON_DIR "${CMAKE_SOURCE_DIR}/node_modules/@nozbe/simdjson/src" CACHE PATH
    "Folder holding the simdjson amalgamation (simdjson.cpp, simdjson.h)")
if(NOT EXISTS "${AMN_SIMDJSON_DIR}/simdjson.cpp")
  message(FATAL_ERROR "simdjson amalgamation not found in ${AMN_SIMDJSON_DIR}: run `make bootstrap` (npm ci) first")
endif()

set(AMN_VENDOR_INCLUDE "${CMAKE_BINARY_DIR}/vendor-include")
foreach(dir hwy catch2 CLI)
  if(EXISTS "/usr/include/${dir}" AND NOT EXISTS "${AMN_VENDOR_INCLUDE}/${dir}")
    file(COPY "/usr/include/${dir}" DESTINATION "${AMN_VENDOR_INCLUDE}")
  endif()
endforeach()
if(NOT EXISTS "/usr/include/xxhash.h")
  message(FATAL_ERROR "xxhash.h not found: run `make bootstrap` (apt libxxhash-dev)")
endif()
if(NOT EXISTS "${AMN_VENDOR_INCLUDE}/xxhash.h")
  file(COPY "/usr/include/xxhash.h" DESTINATION "${AMN_VENDOR_INCLUDE}")
endif()

add_library(amn_simdjson STATIC "${AMN_SIMDJSON_DIR}/simdjson.cpp")
target_include_directories(amn_simdjson SYSTEM PUBLIC "${AMN_SIMDJSON_DIR}")
# The core is exception-free; simdjson's error-code API is all we use.
target_compile_definitions(amn_simdjson PUBLIC SIMDJSON_EXCEPTIONS=0)
target_compile_options(amn_simdjson PRIVATE -fno-exceptions -w)

add_library(amn_hwy INTERFACE)
target_include_directories(amn_hwy SYSTEM INTERFACE "${AMN_VENDOR_INCLUDE}")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64" AND NOT EMSCRIPTEN)
  find_library(AMN_HWY_LIB hwy REQUIRED)
  target_link_libraries(amn_hwy INTERFACE "${AMN_HWY_LIB}")
  set(AMN_HWY_DYNAMIC ON)
else()
  # One target per build (NEON or WASM SIMD128): static dispatch, header-only.
  target_compile_definitions(amn_hwy INTERFACE HWY_COMPILE_ONLY_STATIC=1)
  set(AMN_HWY_DYNAMIC OFF)
endif()

add_library(amn_cli11 INTERFACE)
target_include_directories(amn_cli11 SYSTEM INTERFACE "${AMN_VENDOR_INCLUDE}")

add_library(amn_catch2 INTERFACE)
target_include_directories(amn_catch2 SYSTEM INTERFACE "${AMN_VENDOR_INCLUDE}")

include(${CMAKE_CURRENT_LIST_DIR}/zlib.cmake)
