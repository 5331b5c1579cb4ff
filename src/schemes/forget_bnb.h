// bitsandbytes as a forget target: NF4 / FP4 (quantize_4bit, optionally with double
// quantization) and LLM.int8(), written in the layout transformers saves
// (docs/formats/quantized/bitsandbytes.md).
#pragma once
#include <memory>

#include "schemes/forget.h"

namespace amn {

// settings.scheme is "nf4", "fp4" or "int8". Errors: invalid_argument for a blocksize
// bitsandbytes lacks, or 4-bit settings given to int8.
Result<std::unique_ptr<Forgetter>> make_bnb_forgetter(const ForgetSettings& settings);

}  // namespace amn
