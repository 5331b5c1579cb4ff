// What a user reads about a model. Produced here, once, so the native CLI, the Node
// CLI and the npm package print the very same bytes.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"

namespace amn {

struct DTypeRow {
  std::string type;  // stored type name (stored_type_name)
  uint64_t tensors = 0, parameters = 0, bytes = 0;
};
// Tensors, parameters and bytes per dtype, largest byte share first.
std::vector<DTypeRow> dtype_histogram(const Model& model);

// Bytes of the output of `remember --to <dtype>`: floating and GGUF block tensors become
// `dtype`, the rest is copied as stored (the planner's rule, convert/plan.cpp).
uint64_t dequantized_bytes(const Model& model, DType dtype);

// The model-info document (docs/json-schema.md), pretty-printed, ending in a newline.
std::string model_info_json(const Model& model);

// The format's facts ("details": JSON, "null" when none; and the same as lines for
// people). GGUF's are written from the header the model keeps, when asked for: writing a
// 32,000-token vocabulary's arrays as JSON was ~60 % of opening its header (report/details.cpp).
std::string details_json_of(const Model& model);
std::vector<std::pair<std::string, std::string>> details_text_of(const Model& model);

// Human output of `amn inspect` (summary, dtype histogram, tensor table).
std::string render_inspect(const Model& model);
// Human output of `amn parse` (files and every record with its byte range).
std::string render_parse(const Model& model);

// "512 B", "60.5 KiB", "1.2 GiB".
std::string human_bytes(uint64_t n);
// "1,234,567".
std::string grouped(uint64_t n);
// A number in a table (amn stats, amn diff): printf's `fmt`, "-" for NaN (no value),
// "inf" / "-inf".
std::string table_number(double v, const char* fmt = "%.6g");

}  // namespace amn
