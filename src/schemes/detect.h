// Scheme detection: which records of a safetensors model are parts of quantized weights
// (FP8 + scales, GPTQ qweight/qzeros/scales/g_idx, ...), from names, dtypes and shapes,
// confirmed by config.json's quantization_config when present. Fills Model::logical and
// Model::part_of. A layout that looks quantized but does not add up becomes a logical
// tensor with an `error` (inspect shows it; converting it fails with that message) —
// never a guess.
#pragma once
#include "core/error.h"
#include "core/model.h"

namespace amn {

Status detect_schemes(Model& model);

}  // namespace amn
