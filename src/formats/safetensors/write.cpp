#include "formats/safetensors/write.h"

#include "core/json.h"

namespace amn {

std::vector<uint8_t> safetensors_header(std::span<const TensorSpec> tensors,
                                        std::span<const std::pair<std::string, std::string>> metadata) {
  std::string json = "{";
  bool first = true;
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    for (size_t i = 0; i < metadata.size(); ++i) {
      if (i) json += ',';
      append_json_string(json, metadata[i].first);
      json += ':';
      append_json_string(json, metadata[i].second);
    }
    json += '}';
    first = false;
  }
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (!first) json += ',';
    first = false;
    append_json_string(json, t.name);
    json += ":{\"dtype\":";
    append_json_string(json, dtype_name(t.dtype));
    json += ",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i) {
      if (i) json += ',';
      json += std::to_string(t.shape[i]);
    }
    json += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + t.nbytes) + "]}";
    offset += t.nbytes;
  }
  json += '}';
  json.append((8 - json.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
  std::vector<uint8_t> out(8 + json.size());
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  std::copy(json.begin(), json.end(), out.begin() + 8);
  return out;
}

}  // namespace amn
