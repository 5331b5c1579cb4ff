# libanamnesis.so: the public C++ API (include/anamnesis/anamnesis.hpp, src/api) over the
# static core, and what `cmake --install` puts in a prefix: the header, the library, a
# CMake package (find_package(anamnesis CONFIG) -> anamnesis::anamnesis) and anamnesis.pc.
#
# Only the API is exported: src/api is compiled with hidden visibility (ANAMNESIS_API marks
# what is public) and --exclude-libs hides every symbol of the static archives linked in
# (amn_core, simdjson, zlib), so they are private link dependencies that need not be
# installed, and a program may link another simdjson or zlib beside this library. Highway
# is the system's shared libhwy (apt libhwy1), found at run time like any system library.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Archives linked into a shared object must be position-independent. Set here, so only
# the builds that make the library compile the core this way.
set_target_properties(amn_core amn_simdjson amn_zlib amn_local PROPERTIES POSITION_INDEPENDENT_CODE ON)

add_library(anamnesis SHARED src/api/model.cpp src/api/convert.cpp src/api/reports.cpp)
add_library(anamnesis::anamnesis ALIAS anamnesis)
target_include_directories(anamnesis PUBLIC
  $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(anamnesis PRIVATE amn_local)
# The header needs C++17 (std::variant); the library itself is built as C++20.
target_compile_features(anamnesis INTERFACE cxx_std_17)
target_compile_options(anamnesis PRIVATE -fno-exceptions -Wall -Wextra)
# The version script keeps the export list to namespace anamnesis (anamnesis.map says why);
# --no-undefined: every symbol the API needs is in the library or its shared dependencies.
target_link_options(anamnesis PRIVATE -Wl,--exclude-libs,ALL -Wl,--no-undefined
  -Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/cmake/anamnesis.map)
set_property(TARGET anamnesis APPEND PROPERTY LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cmake/anamnesis.map)
# Before 1.0 a minor version may change the ABI, so it is part of the soname.
set_target_properties(anamnesis PROPERTIES
  CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})

set(AMN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/anamnesis)
install(TARGETS amn RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS anamnesis EXPORT anamnesisTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/anamnesis DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT anamnesisTargets NAMESPACE anamnesis:: DESTINATION ${AMN_CMAKE_DIR})
configure_package_config_file(cmake/anamnesisConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/anamnesisConfig.cmake
  INSTALL_DESTINATION ${AMN_CMAKE_DIR})
# 0.x: only the same minor version is compatible (the soname rule above).
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/anamnesisConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/anamnesisConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/anamnesisConfigVersion.cmake
  DESTINATION ${AMN_CMAKE_DIR})

# anamnesis.pc finds its prefix from its own folder (${pcfiledir}), so the installed tree
# can be moved, or installed with `cmake --install --prefix` into a scratch folder.
file(RELATIVE_PATH AMN_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" AMN_PC_TO_PREFIX "${AMN_PC_TO_PREFIX}")
configure_file(cmake/anamnesis.pc.in ${CMAKE_CURRENT_BINARY_DIR}/anamnesis.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/anamnesis.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
