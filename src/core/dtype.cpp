#include "core/dtype.h"

#include <array>

#include "core/checked.h"

namespace amn {
namespace {

// Names and sizes follow huggingface/safetensors (safetensors/src/tensor.rs, enum Dtype
// and Dtype::bitsize): F4 is 4 bits, F6_* are 6 bits, the F8_* family 8 bits.
constexpr std::array<DTypeInfo, kDTypeCount> kTable = {{
    {DType::BOOL, "BOOL", 1, 1, DTypeKind::boolean},
    {DType::U8, "U8", 1, 1, DTypeKind::unsigned_int},
    {DType::I8, "I8", 1, 1, DTypeKind::signed_int},
    {DType::F8_E5M2, "F8_E5M2", 1, 1, DTypeKind::floating},
    {DType::F8_E4M3, "F8_E4M3", 1, 1, DTypeKind::floating},
    {DType::F8_E8M0, "F8_E8M0", 1, 1, DTypeKind::floating},
    {DType::F8_E4M3FNUZ, "F8_E4M3FNUZ", 1, 1, DTypeKind::floating},
    {DType::F8_E5M2FNUZ, "F8_E5M2FNUZ", 1, 1, DTypeKind::floating},
    {DType::F4, "F4", 2, 1, DTypeKind::floating},
    {DType::F6_E2M3, "F6_E2M3", 4, 3, DTypeKind::floating},
    {DType::F6_E3M2, "F6_E3M2", 4, 3, DTypeKind::floating},
    {DType::I16, "I16", 1, 2, DTypeKind::signed_int},
    {DType::U16, "U16", 1, 2, DTypeKind::unsigned_int},
    {DType::F16, "F16", 1, 2, DTypeKind::floating},
    {DType::BF16, "BF16", 1, 2, DTypeKind::floating},
    {DType::I32, "I32", 1, 4, DTypeKind::signed_int},
    {DType::U32, "U32", 1, 4, DTypeKind::unsigned_int},
    {DType::F32, "F32", 1, 4, DTypeKind::floating},
    {DType::C64, "C64", 1, 8, DTypeKind::complex},
    {DType::F64, "F64", 1, 8, DTypeKind::floating},
    {DType::I64, "I64", 1, 8, DTypeKind::signed_int},
    {DType::U64, "U64", 1, 8, DTypeKind::unsigned_int},
}};

}  // namespace

const DTypeInfo& dtype_info(DType t) { return kTable[static_cast<size_t>(t)]; }
std::string_view dtype_name(DType t) { return dtype_info(t).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& info : kTable) {
    if (info.name == name) return info.dtype;
  }
  return std::nullopt;
}

std::optional<DType> float_target_from_name(std::string_view name) {
  if (name == "bf16" || name == "BF16") return DType::BF16;
  if (name == "f16" || name == "F16" || name == "fp16") return DType::F16;
  if (name == "f32" || name == "F32" || name == "fp32") return DType::F32;
  return std::nullopt;
}

Result<uint64_t> dtype_nbytes(DType t, uint64_t elements) {
  const auto& info = dtype_info(t);
  if (elements % info.block_elems != 0) {
    return make_error(ErrorCode::parse,
                      std::to_string(elements) + " elements of " + std::string(info.name) +
                          " do not make a whole number of bytes (" + std::to_string(info.block_elems) +
                          " elements per " + std::to_string(info.block_bytes) + " bytes)");
  }
  auto n = checked_mul(elements / info.block_elems, info.block_bytes);
  if (!n) return make_error(ErrorCode::parse, "tensor byte size overflows 64 bits");
  return *n;
}

bool is_castable_float(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64;
}

}  // namespace amn
