# The WASM module consumed by npm/: every -s flag in one place, each with its reason.
# Built with Debian's emscripten 3.1.6 (`emcmake cmake`, NODE_PATH=/usr/share/nodejs).

# 128-bit SIMD: Highway's static WASM target.
target_compile_options(amn_core PUBLIC -msimd128)
target_compile_options(amn_simdjson PRIVATE -msimd128)

add_executable(amn-core bindings/amn_bindings.cpp)
target_link_libraries(amn-core PRIVATE amn_core amn_command_line)
target_compile_options(amn-core PRIVATE -msimd128 -Wall -Wextra)
set_target_properties(amn-core PROPERTIES
  SUFFIX ".js"
  RUNTIME_OUTPUT_DIRECTORY "${CMAKE_SOURCE_DIR}/npm/dist")
target_link_options(amn-core PRIVATE
  --bind                       # embind: the Session class and free functions
  -sMODULARIZE=1               # a factory function, not a global Module
  -sEXPORT_ES6=1               # ...as an ES module the npm package imports
  -sEXPORT_NAME=createAmnCore
  -sENVIRONMENT=web,worker     # the node environment's glue needs __dirname (no ESM);
                               # Node gets the wasm bytes as `wasmBinary` instead
  -sALLOW_MEMORY_GROWTH=1      # tensors are large; start small, grow on demand
  -sINITIAL_MEMORY=33554432    # 32 MiB
  -sMAXIMUM_MEMORY=4GB         # wasm32's whole address space (pointers: >>> 0 in JS)
  -sEXPORTED_FUNCTIONS=_malloc,_free  # JS allocates input buffers the core adopts
  -sEXPORTED_RUNTIME_METHODS=HEAPU8
  -sFILESYSTEM=0               # the core is sans-IO; no emulated file system
  -sDYNAMIC_EXECUTION=0        # no eval/new Function: pages with a strict CSP load it
  -sTOTAL_STACK=1048576        # simdjson and the parsers stay well inside 1 MiB (3.1.6 spelling)
  -sASSERTIONS=0
  # -fwasm-exceptions (CMakeLists.txt, every module): catching for CLI11 in
  # session/command_line.cpp and std::regex; the rest of the core is built -fno-exceptions
)

# The package's ERROR_CODES, written from the module just linked (its errorCodes()), so the
# JS list is the core's, never a hand copy.
find_program(AMN_NODE node REQUIRED)
add_custom_command(TARGET amn-core POST_BUILD
  COMMAND "${AMN_NODE}" "${CMAKE_SOURCE_DIR}/tools/write-error-codes.mjs" "${CMAKE_SOURCE_DIR}/npm/dist"
  COMMENT "npm/dist/error-codes.js from the core's errorCodes()"
  VERBATIM)

# The package's `amn` command, npm/dist/amn.cjs: bin/amn.js and the modules it imports in one
# file (tools/bundle-cli.mjs, with rolldown from the repository's node_modules), rebuilt
# when the core or any of the package's sources changes. The tests run this file.
file(GLOB AMN_NPM_SOURCES CONFIGURE_DEPENDS
  "${CMAKE_SOURCE_DIR}/npm/*.js" "${CMAKE_SOURCE_DIR}/npm/bin/*.js" "${CMAKE_SOURCE_DIR}/npm/lib/*.js")
add_custom_command(OUTPUT "${CMAKE_SOURCE_DIR}/npm/dist/amn.cjs"
  COMMAND "${AMN_NODE}" "${CMAKE_SOURCE_DIR}/tools/bundle-cli.mjs" "${CMAKE_SOURCE_DIR}/npm"
  DEPENDS amn-core ${AMN_NPM_SOURCES} "${CMAKE_SOURCE_DIR}/tools/bundle-cli.mjs"
  WORKING_DIRECTORY "${CMAKE_SOURCE_DIR}"
  COMMENT "npm/dist/amn.cjs: the amn command, bundled"
  VERBATIM)
add_custom_target(amn-cli ALL DEPENDS "${CMAKE_SOURCE_DIR}/npm/dist/amn.cjs")
