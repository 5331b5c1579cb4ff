# zlib 1.3.1, inflate side only, from the C sources shipped inside npm's zlib-sync
# (deps/zlib, installed by `npm ci`; its node-gyp install script is denied in
# package.json's allowScripts). The same source builds native, aarch64 and WASM:
# emscripten's -sUSE_ZLIB port cannot be downloaded here, and a system zlib would
# differ per target.
set(AMN_ZLIB_DIR "${CMAKE_SOURCE_DIR}/node_modules/zlib-sync/deps/zlib" CACHE PATH
    "Folder holding the zlib 1.3.1 C sources (inflate.c, zlib.h, ...)")
if(NOT EXISTS "${AMN_ZLIB_DIR}/inflate.c")
  message(FATAL_ERROR "zlib sources not found in ${AMN_ZLIB_DIR}: run `make bootstrap` (npm ci) first")
endif()

add_library(amn_zlib STATIC
  "${AMN_ZLIB_DIR}/adler32.c"
  "${AMN_ZLIB_DIR}/crc32.c"
  "${AMN_ZLIB_DIR}/inffast.c"
  "${AMN_ZLIB_DIR}/inflate.c"
  "${AMN_ZLIB_DIR}/inftrees.c"
  "${AMN_ZLIB_DIR}/zutil.c")
target_include_directories(amn_zlib SYSTEM PUBLIC "${AMN_ZLIB_DIR}")
# HAVE_UNISTD_H is what zlib's ./configure would set on every target we build; PUBLIC so
# zip.cpp sees the same zconf.h. Z_PREFIX renames the symbols (z_inflate ...) so a
# system libz linked into the same program can never be picked up instead.
target_compile_definitions(amn_zlib PUBLIC HAVE_UNISTD_H Z_PREFIX)
target_compile_options(amn_zlib PRIVATE -w)
set_target_properties(amn_zlib PROPERTIES C_STANDARD 99 POSITION_INDEPENDENT_CODE ON)
