// libFuzzer target: the GGUF parser through both source kinds (memory, and the sparse,
// need_bytes-driven one, which must converge and reach the same verdict), then checks
// of what parsed: every tensor of known size lies inside the file, aligned, and the
// compact array accessors stay in bounds, and what inspect shows of it is written: the
// details as JSON (which must parse: any key, string or float a file may hold) and as
// text. Any crash, leak or sanitizer report is a bug.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "formats/gguf/describe.h"
#include "formats/gguf/parse.h"
#include <simdjson.h>
#include "sparse_feed.h"

using namespace amn;

namespace {

void walk(const GgufValue& v) {
  if (v.type != GgufType::ARRAY) return;
  for (uint64_t i = 0; i < v.count; ++i) {
    switch (v.elem_type) {
      case GgufType::ARRAY: walk(v.items[i]); break;
      case GgufType::STRING: (void)v.string_at(i).size(); break;
      case GgufType::BOOL: (void)v.bool_at(i); break;
      case GgufType::FLOAT32: case GgufType::FLOAT64: (void)v.float_at(i); break;
      case GgufType::INT8: case GgufType::INT16: case GgufType::INT32: case GgufType::INT64: (void)v.int_at(i); break;
      default: (void)v.uint_at(i); break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ParseLimits limits;
  limits.max_single_alloc = 64 << 20;
  limits.max_total_bytes = 256 << 20;
  FileSet set;
  set.add("model.gguf", std::make_unique<MemorySource>(std::span<const uint8_t>(data, size)));
  auto g = parse_gguf(set, 0, limits);
  auto s = fuzz::parse_sparse(data, size, "model.gguf", [&](FileSet& set) { return parse_gguf(set, 0, limits); });
  if (g.ok() != s.ok()) __builtin_trap();
  if (!g) {
    if (g.error().message != s.error().message) __builtin_trap();
    return 0;
  }
  if (g->data_offset % g->alignment != 0) __builtin_trap();
  for (const auto& t : g->tensors) {
    if (t.ne.size() > kGgmlMaxDims) __builtin_trap();
    if (t.offset % g->alignment != 0) __builtin_trap();
    if (t.size_known && (g->data_offset + t.offset + t.nbytes > size)) __builtin_trap();
  }
  for (const auto& [key, value] : g->kv) walk(value);
  const std::string details = gguf_details_json(*g);
  simdjson::dom::parser parser;
  if (parser.parse(details).error()) __builtin_trap();
  (void)gguf_details_text(*g);
  return 0;
}
