#include "schemes/bnb_state.h"

#include <optional>
#include <string>

#include <simdjson.h>

namespace amn {
namespace {

constexpr size_t kMaxQuantStateDims = 8;

std::optional<DType> torch_dtype(std::string_view name) {
  if (name == "bfloat16") return DType::BF16;
  if (name == "float16") return DType::F16;
  if (name == "float32") return DType::F32;
  return std::nullopt;
}

}  // namespace

Result<BnbQuantState> parse_quant_state(const std::vector<uint8_t>& bytes, std::string_view type_from_name, bool nested) {
  auto bad = [](std::string m) { return make_error(ErrorCode::parse, "quant_state: " + std::move(m)); };
  simdjson::dom::parser parser;
  simdjson::dom::object o;
  const simdjson::padded_string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (parser.parse(text).get_object().get(o) != simdjson::SUCCESS) return bad("not a JSON object");
  BnbQuantState q;
  std::string_view s;
  if (o["quant_type"].get_string().get(s) != simdjson::SUCCESS) return bad("no quant_type string");
  if (s != type_from_name)
    return bad("quant_type '" + std::string(s) + "' disagrees with the name's '" + std::string(type_from_name) + "'");
  q.type = s == "fp4" ? quant::Bnb4Type::fp4 : quant::Bnb4Type::nf4;
  if (o["blocksize"].get_uint64().get(q.blocksize) != simdjson::SUCCESS) return bad("no integer blocksize");
  simdjson::dom::element dtype;
  if (o["dtype"].get(dtype) != simdjson::SUCCESS) {
    q.dtype = DType::BF16;  // the natural dtype of a 4-bit checkpoint that does not say
    q.dtype_given = false;
  } else {
    if (dtype.get_string().get(s) != simdjson::SUCCESS) return bad("dtype is not a string");
    auto dt = torch_dtype(s);
    if (!dt) return bad("dtype '" + std::string(s) + "' is not bfloat16, float16 or float32");
    q.dtype = *dt;
  }
  simdjson::dom::array shape;
  if (o["shape"].get_array().get(shape) != simdjson::SUCCESS) return bad("no shape array");
  if (shape.size() == 0 || shape.size() > kMaxQuantStateDims)
    return bad("shape has " + std::to_string(shape.size()) + " dimensions (1 to 8 expected)");
  for (auto d : shape) {
    uint64_t v = 0;
    if (d.get_uint64().get(v) != simdjson::SUCCESS) return bad("shape holds a non-integer");
    q.shape.push_back(v);
  }
  if (nested) {
    q.nested = true;
    simdjson::dom::element nb;
    if (o["nested_blocksize"].get(nb) != simdjson::SUCCESS) return bad("no nested_blocksize, yet there is a nested_absmax");
    if (nb.get_uint64().get(q.nested_blocksize) != simdjson::SUCCESS) return bad("nested_blocksize is not an integer");
    if (o["nested_dtype"].get_string().get(s) == simdjson::SUCCESS && s != "float32")
      return bad("nested_dtype '" + std::string(s) + "' (float32 expected)");
    double offset = 0;
    if (o["nested_offset"].get_double().get(offset) != simdjson::SUCCESS) return bad("no nested_offset number");
    q.nested_offset = static_cast<float>(offset);  // bitsandbytes' offset is an F32 tensor
  }
  return q;
}

}  // namespace amn
