#include <catch2/catch.hpp>

#include "core/dtype.h"

using namespace amn;

TEST_CASE("dtype table covers every safetensors dtype and round-trips names", "[dtype]") {
  const char* names[] = {"BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3",
                         "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16",
                         "I32", "U32", "F32", "C64", "F64", "I64", "U64"};
  for (const char* n : names) {
    auto t = dtype_from_name(n);
    REQUIRE(t);
    CHECK(dtype_name(*t) == n);
  }
  CHECK_FALSE(dtype_from_name("F128"));
  CHECK_FALSE(dtype_from_name("f32"));  // safetensors spelling is upper case
}

TEST_CASE("sub-byte dtypes count logical elements", "[dtype]") {
  CHECK(dtype_nbytes(DType::F4, 10).value() == 5);
  CHECK_FALSE(dtype_nbytes(DType::F4, 3));
  CHECK(dtype_nbytes(DType::F6_E2M3, 8).value() == 6);
  CHECK_FALSE(dtype_nbytes(DType::F6_E3M2, 6));
  CHECK(dtype_nbytes(DType::C64, 3).value() == 24);
  CHECK_FALSE(dtype_nbytes(DType::F64, uint64_t{1} << 62));  // overflow
}
