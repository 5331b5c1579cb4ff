// The values a one-tensor plan writes (F32 for every float and every dequantized weight,
// the stored whole-number / boolean / F64 values otherwise) read as doubles: shared by
// amn stats (value_stats) and amn diff (model_diff).
#pragma once
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "core/dtype.h"
#include "core/error.h"

namespace amn::values {

// The stored values as doubles: F32 (every float and every dequantized weight, cast by
// the plan), or a whole-number / boolean / F64 tensor kept as stored.
template <class T>
void each_as(std::span<const uint8_t> bytes, auto&& f) {
  const size_t n = bytes.size() / sizeof(T);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof v);
    f(static_cast<double>(v));
  }
}

inline bool described(DType dtype) {
  switch (dtype) {
    case DType::F32: case DType::F64: case DType::BOOL: case DType::U8: case DType::I8: case DType::I16:
    case DType::U16: case DType::I32: case DType::U32: case DType::I64: case DType::U64:
      return true;
    default:
      return false;
  }
}

inline Status each_value(DType dtype, std::span<const uint8_t> bytes, auto&& f) {
  switch (dtype) {
    case DType::F32: each_as<float>(bytes, f); return {};
    case DType::F64: each_as<double>(bytes, f); return {};
    case DType::BOOL:
    case DType::U8: each_as<uint8_t>(bytes, f); return {};
    case DType::I8: each_as<int8_t>(bytes, f); return {};
    case DType::I16: each_as<int16_t>(bytes, f); return {};
    case DType::U16: each_as<uint16_t>(bytes, f); return {};
    case DType::I32: each_as<int32_t>(bytes, f); return {};
    case DType::U32: each_as<uint32_t>(bytes, f); return {};
    case DType::I64: each_as<int64_t>(bytes, f); return {};
    case DType::U64: each_as<uint64_t>(bytes, f); return {};
    default:
      return make_error(ErrorCode::unsupported, "statistics of " + std::string(dtype_name(dtype)) + " values are not supported");
  }
}

}  // namespace amn::values
