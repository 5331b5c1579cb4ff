// Which quantization config detection works from. Checkpoints carry it in up to two
// places: transformers' config.json ("quantization_config", or MLX's "quantization") and
// the quantizer's own file beside it (quantize_config.json from AutoGPTQ / GPTQModel,
// quant_config.json from AutoAWQ before 0.2). They are not always the same: GPTQModel
// may record `checkpoint_format: gptq_v2` in quantize_config.json only, and reading that
// checkpoint as v1 gives wrong values without any error.
//
// GPTQModel's QuantizeConfig.from_pretrained reads the first of quantize_config.json,
// quant_config.json, config.json (QUANT_CONFIG_FILENAME_COMPAT); we follow that order.
// The quantizer's file is brought to transformers' vocabulary first (GPTQModel's
// QUANT_CONFIG_ARG_SYNONYMS: w_bit / wbits -> bits, q_group_size -> group_size), and a
// file without quant_method gets the one its writer implies (AutoAWQ's keys: "awq";
// otherwise AutoGPTQ's default, "gptq").
#pragma once
#include <string>
#include <vector>

#include "core/model.h"

namespace amn::schemes {

// The safetensors metadata key under which a forget output keeps its quantization config
// (one JSON object as text), read when no config file gives one.
inline constexpr const char* kQuantizationConfigKey = "quantization_config";
inline constexpr const char* kQuantizationConfigMetadataSource = "the file's metadata";

struct QuantConfigChoice {
  std::string json;     // one JSON object (minified), or "" when there is none
  std::string source;   // "quantize_config.json", "quant_config.json", "config.json", the metadata's or ""
  std::vector<std::string> warnings;  // the two sources disagree on a decoding parameter
};

QuantConfigChoice choose_quant_config(const Model& model);

}  // namespace amn::schemes
