// What every family's detector works from: the records by name, the parsed config, and
// the claims made so far (a record belongs to at most one logical tensor).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include <simdjson.h>

#include "core/model.h"
#include "core/source.h"
#include "schemes/scheme.h"

namespace amn {

class SchemeContext {
 public:
  SchemeContext(Model& model, FileSet& files);
  const Model& model() const { return model_; }
  // The quantization config (schemes/quant_config.h: the quantizer's own file, else
  // config.json's "quantization_config" or MLX "quantization"), if any, and the file it
  // came from (for messages).
  std::optional<simdjson::dom::object> quantization_config() const { return qconfig_; }
  const std::string& quantization_config_source() const { return qconfig_source_; }
  std::optional<simdjson::dom::object> config() const { return config_; }
  // An unclaimed record by exact name.
  std::optional<uint32_t> find(std::string_view name) const;
  bool claimed(uint32_t record) const { return model_.is_consumed(record); }
  // Adds a logical tensor made of `l.parts`; its stored_bytes is summed here.
  void claim(LogicalTensor l);
  // Marks a record consumed without output.
  void consume(uint32_t record) { model_.part_of[record] = Model::kConsumedCompanion; }
  // The bytes of small records, copied out (a sparse source may end earlier views).
  // The callers bound their sizes first. Every missing range comes back in one need_bytes.
  Result<std::vector<std::vector<uint8_t>>> read_records(std::span<const uint32_t> records);
  // A record as a byte range (for SchemeOp::inputs).
  ByteRange range(uint32_t record) const;
  // A problem that does not stop the model from being read (Model::warnings).
  void warn(std::string message) { model_.warnings.push_back(std::move(message)); }

 private:
  Model& model_;
  FileSet& files_;
  simdjson::dom::parser config_parser_, parser_;  // each owns the document it parsed
  std::optional<simdjson::dom::object> config_, qconfig_;
  std::string qconfig_source_;
  std::unordered_map<std::string_view, uint32_t> by_name_;
};

// Families, in the order they run (more specific layouts first); one file each.
Status detect_fp4(SchemeContext& ctx);                // fp4.cpp: MXFP4 (gpt-oss), NVFP4 (ModelOpt, compressed-tensors)
Status detect_bnb(SchemeContext& ctx);                // bnb.cpp: bitsandbytes NF4 / FP4 / INT8
Status detect_gptq(SchemeContext& ctx);               // gptq.cpp
Status detect_awq(SchemeContext& ctx);                // awq.cpp
Status detect_compressed_tensors(SchemeContext& ctx); // compressed_tensors.cpp: pack- / naive-quantized ints
Status detect_mlx(SchemeContext& ctx);                // mlx.cpp
Status detect_fp8(SchemeContext& ctx);                // fp8.cpp

}  // namespace amn
