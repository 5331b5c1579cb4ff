// A bitsandbytes 4-bit quant_state: the JSON QuantState.as_dict(packed=True) writes
// beside a packed weight. Read by detection (bnb.cpp) and by forget --like (the settings
// and offset of a reference's weights).
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/quant/bnb.h"

namespace amn {

struct BnbQuantState {
  quant::Bnb4Type type = quant::Bnb4Type::nf4;
  uint64_t blocksize = 0;
  DType dtype = DType::F32;
  bool dtype_given = true;  // false: no "dtype" key, BF16 assumed
  std::vector<uint64_t> shape;
  bool nested = false;
  uint64_t nested_blocksize = 0;
  float nested_offset = 0;
};

// The JSON QuantState.as_dict(packed=True) wrote: quant_type, blocksize, dtype, shape and,
// when double-quantized, nested_blocksize, nested_dtype, nested_offset. Double
// quantization is decided as QuantState.from_dict decides it: by the presence of the
// nested_absmax tensor (`nested`), whatever nested_* keys the JSON carries. A JSON
// without "dtype" (the minimal state other writers emit) is read as bfloat16.
Result<BnbQuantState> parse_quant_state(const std::vector<uint8_t>& bytes, std::string_view type_from_name, bool nested);

}  // namespace amn
