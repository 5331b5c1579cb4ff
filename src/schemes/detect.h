// Scheme detection: which records of a safetensors model are parts of quantized weights
// (FP8 + scales, GPTQ qweight/qzeros/scales/g_idx, ...), from names, dtypes and shapes,
// confirmed by config.json's quantization_config when present. Fills Model::logical and
// Model::part_of. A layout that looks quantized but does not add up becomes a logical
// tensor with an `error` (inspect shows it; converting it fails with that message) —
// never a guess.
#pragma once
#include "core/error.h"
#include "core/model.h"
#include "core/source.h"

namespace amn {

// `files` gives detectors the few small records whose bytes say what the tensor is (a
// bitsandbytes quant_state); their missing ranges come back as one need_bytes error.
Status detect_schemes(Model& model, FileSet& files);

}  // namespace amn
