#include "formats/gguf/describe.h"

#include <cmath>
#include <string>

#include "core/float_text.h"
#include "core/json.h"
#include "core/text.h"

namespace amn {
namespace {

// GGUF strings are not guaranteed UTF-8; JSON text must be. Invalid bytes become U+FFFD.
void append_string(std::string& out, std::string_view s) {
  if (valid_utf8(s)) {
    append_json_string(out, s);
    return;
  }
  std::string fixed;
  for (unsigned char c : s) {
    if (c < 0x80) fixed += static_cast<char>(c);
    else fixed += "\xEF\xBF\xBD";
  }
  append_json_string(out, fixed);
}

// The shortest %g text that reads back as the same value (core/float_text.h). JSON has no
// NaN or Infinity, so those are null.
template <class F>
void append_float(std::string& out, F v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  append_shortest_g(out, v);
}

bool is_signed(GgufType t) {
  return t == GgufType::INT8 || t == GgufType::INT16 || t == GgufType::INT32 || t == GgufType::INT64;
}

void append_element(std::string& out, const GgufValue& v, uint64_t i) {
  const GgufType t = v.elem_type;
  if (t == GgufType::STRING) append_string(out, v.string_at(i));
  else if (t == GgufType::BOOL) out += v.bool_at(i) ? "true" : "false";
  else if (t == GgufType::FLOAT32) append_float(out, static_cast<float>(v.float_at(i)));
  else if (t == GgufType::FLOAT64) append_float(out, v.float_at(i));
  else if (is_signed(t)) append_int(out, v.int_at(i));
  else append_uint(out, v.uint_at(i));
}

void append_value(std::string& out, const GgufValue& v) {
  switch (v.type) {
    case GgufType::STRING: append_string(out, v.str); return;
    case GgufType::BOOL: out += v.b ? "true" : "false"; return;
    case GgufType::FLOAT32: append_float(out, static_cast<float>(v.f)); return;
    case GgufType::FLOAT64: append_float(out, v.f); return;
    case GgufType::ARRAY:
      out += '[';
      for (uint64_t i = 0; i < v.count; ++i) {
        if (i) out += ',';
        if (v.elem_type == GgufType::ARRAY) append_value(out, v.items[i]);
        else append_element(out, v, i);
      }
      out += ']';
      return;
    default:
      if (is_signed(v.type)) append_int(out, v.i);
      else append_uint(out, v.u);
  }
}

std::string type_text(const GgufValue& v) {
  if (v.type != GgufType::ARRAY) return std::string(gguf_type_name(v.type));
  if (v.elem_type == GgufType::ARRAY && !v.items.empty()) return "ARRAY[" + type_text(v.items[0]) + "]";
  return "ARRAY[" + std::string(gguf_type_name(v.elem_type)) + "]";
}

// A value as people read it: strings quoted (JSON-escaped, cut at 80 characters),
// arrays as "[count × TYPE] first items, ...".
std::string short_text(const GgufValue& v) {
  std::string out;
  if (v.type == GgufType::ARRAY) {
    out.append("[").append(std::to_string(v.count)).append(" x ").append(type_text(v), 6);
    out.pop_back();
    out += "] ";
    const uint64_t shown = std::min<uint64_t>(v.count, 6);
    for (uint64_t i = 0; i < shown; ++i) {
      if (i) out += ", ";
      std::string item;
      if (v.elem_type == GgufType::ARRAY) item = short_text(v.items[i]);
      else append_element(item, v, i);
      out += item.size() > 40 ? item.substr(0, 37) + "..." : item;
    }
    if (v.count > shown) out += ", ...";
    return out;
  }
  append_value(out, v);
  if (out.size() > 80) out = out.substr(0, 77) + "...";
  return out;
}

}  // namespace

void add_gguf_tensors(const GgufFile& gguf, uint32_t file, Model& model) {
  for (const auto& t : gguf.tensors) {
    TensorRecord r;
    r.name = t.name;
    r.shape.assign(t.ne.rbegin(), t.ne.rend());  // row-major
    r.elements = t.elements;
    r.file = file;
    r.offset = gguf.data_offset + t.offset;
    r.nbytes = t.size_known ? t.nbytes : 0;
    r.size_known = t.size_known;
    const GgmlTraits* info = ggml_traits(t.type);
    // Plain element types are DTypes; block types and unknown ids keep their own name.
    const std::optional<DType> plain = info ? info->dtype : std::nullopt;
    if (plain) r.dtype = *plain;
    else r.block_type = info ? std::string(info->name) : "type " + std::to_string(ggml_id(t.type));
    if (!plain && ggml_type_sized(info)) r.ggml_type = t.type;
    model.tensors.push_back(std::move(r));
  }
}

std::string gguf_details_json(const GgufFile& gguf) {
  std::string o = "{\"version\": " + std::to_string(gguf.version) + ", \"byte_order\": \"" +
                  (gguf.big_endian ? "big" : "little") + "\", \"alignment\": " + std::to_string(gguf.alignment) +
                  ", \"data_offset\": " + std::to_string(gguf.data_offset) + ", \"split\": ";
  if (gguf.split) {
    o += "{\"no\": " + std::to_string(gguf.split->no) + ", \"count\": " + std::to_string(gguf.split->count) +
         ", \"tensors\": " + std::to_string(gguf.split->tensors_count) + "}";
  } else {
    o += "null";
  }
  o += ", \"kv\": {";
  for (size_t i = 0; i < gguf.kv.size(); ++i) {
    if (i) o += ", ";
    append_string(o, gguf.kv[i].first);
    o += ": {\"type\": ";
    append_json_string(o, type_text(gguf.kv[i].second));
    o += ", \"value\": ";
    append_value(o, gguf.kv[i].second);
    o += "}";
  }
  o += "}}";
  return o;
}

std::vector<std::pair<std::string, std::string>> gguf_details_text(const GgufFile& gguf) {
  std::vector<std::pair<std::string, std::string>> out;
  // Appended, not `"v" + to_string(...) + ...`: GCC 12 warns (-Wrestrict, a false positive)
  // on that chain's inlined operator+.
  std::string format = "v";
  format += std::to_string(gguf.version);
  format += gguf.big_endian ? ", big-endian, alignment " : ", little-endian, alignment ";
  format += std::to_string(gguf.alignment);
  out.emplace_back("GGUF", std::move(format));
  if (gguf.split) {
    out.emplace_back("split", "shard " + std::to_string(gguf.split->no + 1) + " of " +
                                  std::to_string(gguf.split->count));
  }
  if (const GgufValue* tokens = gguf.find("tokenizer.ggml.tokens"); tokens && tokens->type == GgufType::ARRAY) {
    const GgufValue* model = gguf.find("tokenizer.ggml.model");
    std::string text = std::to_string(tokens->count) + " tokens";
    if (model && model->type == GgufType::STRING) text = model->str + ", " + text;
    out.emplace_back("tokenizer", text);
  }
  for (const auto& [key, value] : gguf.kv) {
    std::string k;
    append_string(k, key);
    // Arrays say their element type in their summary; scalars get it in front.
    out.emplace_back(k.substr(1, k.size() - 2), value.type == GgufType::ARRAY
                                                    ? short_text(value)
                                                    : type_text(value) + "  " + short_text(value));
  }
  return out;
}

}  // namespace amn
