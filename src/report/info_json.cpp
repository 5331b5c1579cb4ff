#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>

#include "core/json.h"
#include "core/text.h"
#include "report/report.h"

namespace amn {
namespace {

// A tensor's run of numbers, written through a pointer and appended once. In WASM each
// std::string append is a call, a capacity check and a memcpy call: appending these ten
// pieces one by one took a quarter of a 1,008-tensor model's info (0.93 ms, now 0.71).
// Five numbers of at most 20 digits and their keys fit with room to spare.
struct NumbersLine {
  char text[256];
  char* end = text;
  template <size_t N>
  NumbersLine& put(const char (&literal)[N]) {
    std::memcpy(end, literal, N - 1);  // a constant size: inlined
    end += N - 1;
    return *this;
  }
  NumbersLine& number(uint64_t n) {
    end = std::to_chars(end, end + 20, n).ptr;
    return *this;
  }
};

}  // namespace

std::vector<DTypeRow> dtype_histogram(const Model& model) {
  std::map<std::string, DTypeRow, std::less<>> rows;
  for (const auto& t : model.tensors) {
    auto& r = rows[std::string(stored_type_name(t))];
    r.type = stored_type_name(t);
    r.tensors += 1;
    r.parameters += t.elements;
    r.bytes += t.nbytes;
  }
  std::vector<DTypeRow> out;
  for (auto& [k, v] : rows) out.push_back(v);
  std::stable_sort(out.begin(), out.end(), [](const DTypeRow& a, const DTypeRow& b) { return a.bytes > b.bytes; });
  return out;
}

uint64_t dequantized_bytes(const Model& model, DType dtype) {
  uint64_t n = 0;
  for (const auto& l : model.logical) n += l.elements * dtype_info(dtype).block_bytes;
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    const auto& t = model.tensors[i];
    if (model.is_consumed(i)) continue;
    // A quantized model's passthrough tensors keep their dtype (the planner's rule).
    if (!model.logical.empty() && t.block_type.empty()) {
      n += t.nbytes;
      continue;
    }
    const bool converted = t.ggml_type != kNoGgmlType || (t.block_type.empty() && is_castable_float(t.dtype));
    // A compressed or strided record's stored range is not its size once written out.
    const auto plain = dtype_nbytes(t.dtype, t.elements);
    const uint64_t kept = t.block_type.empty() && plain ? *plain : t.nbytes;
    n += converted ? t.elements * dtype_info(dtype).block_bytes : kept;
  }
  return n;
}

std::string model_info_json(const Model& model) {
  std::string o = "{\n";
  o.reserve(1024 + 256 * model.tensors.size());  // a tensor's line is ~150-250 bytes
  auto key = [&](std::string_view k, int indent = 2) {
    o.append(indent, ' ');
    append_json_string(o, k);
    o += ": ";
  };
  key("amn_info_version");
  o += "1,\n";
  key("format");
  append_json_string(o, model_format_name(model.format));
  o += ",\n";
  key("sharded");
  o += model.sharded ? "true,\n" : "false,\n";
  key("index");
  if (model.index_name.empty()) o += "null";
  else append_json_string(o, model.index_name);
  o += ",\n";
  key("files");
  o += "[";
  for (size_t i = 0; i < model.files.size(); ++i) {
    const auto& f = model.files[i];
    o += i ? ",\n    {" : "\n    {";
    o += "\"name\": ";
    append_json_string(o, f.name);
    o += ", \"size\": " + std::to_string(f.size) + ", \"header_bytes\": " + std::to_string(f.header_bytes) + "}";
  }
  o += model.files.empty() ? "],\n" : "\n  ],\n";
  key("metadata");
  if (model.metadata.empty()) {
    o += "{},\n";
  } else {
    o += "{";
    for (size_t i = 0; i < model.metadata.size(); ++i) {
      o += i ? ",\n" : "\n";
      key(model.metadata[i].first, 4);
      append_json_string(o, model.metadata[i].second);
    }
    o += "\n  },\n";
  }
  key("config");
  o += model.config_json.empty() ? std::string("null") : model.config_json;
  o += ",\n";
  key("quantize_config");
  if (model.quant_config_json.empty()) {
    o += "null";
  } else {
    o += "{\"file\": ";
    append_json_string(o, model.quant_config_file);
    o += ", \"config\": " + model.quant_config_json + "}";
  }
  o += ",\n";
  key("details");
  o += details_json_of(model);
  o += ",\n";
  key("warnings");
  o += "[";
  for (size_t i = 0; i < model.warnings.size(); ++i) {
    if (i) o += ", ";
    append_json_string(o, model.warnings[i]);
  }
  o += "],\n";
  key("tensors");
  o += "[";
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    const auto& t = model.tensors[i];
    const uint64_t data_start = model.files[t.file].header_bytes;
    o += i ? ",\n    {" : "\n    {";
    o += "\"name\": ";
    append_json_string(o, t.name);
    o += ", \"dtype\": ";
    append_json_string(o, stored_type_name(t));
    o += ", \"shape\": ";
    append_dims(o, t.shape);
    NumbersLine line;
    line.put(", \"parameters\": ").number(t.elements);
    line.put(", \"file\": ").number(t.file);
    line.put(", \"offset\": ").number(t.offset);
    line.put(", \"data_offsets\": [").number(t.offset - data_start);
    line.put(", ").number(t.offset - data_start + t.nbytes);
    line.put("], \"nbytes\": ").number(t.nbytes);
    o.append(line.text, static_cast<size_t>(line.end - line.text));
    if (!t.size_known) o += ", \"size_known\": false";
    if (t.big_endian) o += ", \"big_endian\": true";
    if (!t.strides.empty()) {
      o += ", \"strides\": ";
      append_dims(o, t.strides);
    }
    if (t.deflated) o += ", \"compressed\": true, \"inflated_size\": " + std::to_string(t.inflated_size);
    if (model.is_part(i)) {
      const auto& l = model.logical[static_cast<size_t>(model.part_of[i])];
      o += ", \"part_of\": ";
      append_json_string(o, l.name);
      for (const auto& [role, record] : l.parts) {
        if (record != i) continue;
        o += ", \"role\": ";
        append_json_string(o, role);
      }
    } else if (model.is_consumed(i)) {
      o += ", \"part_of\": null, \"role\": \"activation_scale\"";
    }
    o += "}";
  }
  o += model.tensors.empty() ? "],\n" : "\n  ],\n";
  key("logical");
  o += "[";
  for (size_t i = 0; i < model.logical.size(); ++i) {
    const auto& l = model.logical[i];
    o += i ? ",\n    {" : "\n    {";
    o += "\"name\": ";
    append_json_string(o, l.name);
    o += ", \"scheme\": ";
    append_json_string(o, l.scheme);
    o += ", \"variant\": ";
    append_json_string(o, l.variant);
    o += ", \"shape\": ";
    append_dims(o, l.shape);
    o += ", \"parameters\": " + std::to_string(l.elements);
    o += ", \"dtype\": ";
    append_json_string(o, dtype_name(l.natural));
    o += ", \"stored_bytes\": " + std::to_string(l.stored_bytes);
    char bpw[32];
    std::snprintf(bpw, sizeof bpw, "%.4g", l.bits_per_weight());
    o += ", \"bits_per_weight\": " + std::string(bpw);
    o += ", \"parts\": {";
    for (size_t k = 0; k < l.parts.size(); ++k) {
      if (k) o += ", ";
      append_json_string(o, l.parts[k].first);
      o += ": ";
      append_json_string(o, model.tensors[l.parts[k].second].name);
    }
    o += "}";
    if (!l.error.empty()) {
      o += ", \"error\": ";
      append_json_string(o, l.error);
    }
    o += "}";
  }
  o += model.logical.empty() ? "],\n" : "\n  ],\n";
  uint64_t file_bytes = 0;
  for (const auto& f : model.files) file_bytes += f.size;
  key("parameters");
  o += std::to_string(model.parameter_count()) + ",\n";
  key("total_bytes");
  o += std::to_string(model.tensor_bytes()) + ",\n";
  key("file_bytes");
  o += std::to_string(file_bytes) + ",\n";
  key("dequantized_bytes");
  o += "{\"bf16\": " + std::to_string(dequantized_bytes(model, DType::BF16)) +
       ", \"f16\": " + std::to_string(dequantized_bytes(model, DType::F16)) +
       ", \"f32\": " + std::to_string(dequantized_bytes(model, DType::F32)) + "},\n";
  key("dtypes");
  o += "[";
  auto hist = dtype_histogram(model);
  for (size_t i = 0; i < hist.size(); ++i) {
    o += i ? ",\n    {" : "\n    {";
    o += "\"dtype\": ";
    append_json_string(o, hist[i].type);
    o += ", \"tensors\": " + std::to_string(hist[i].tensors) + ", \"parameters\": " +
         std::to_string(hist[i].parameters) + ", \"bytes\": " + std::to_string(hist[i].bytes) + "}";
  }
  o += hist.empty() ? "]\n" : "\n  ]\n";
  o += "}\n";
  return o;
}

}  // namespace amn
