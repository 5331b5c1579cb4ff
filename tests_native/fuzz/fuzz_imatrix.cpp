// libFuzzer target: llama.cpp importance matrices (formats/gguf/imatrix.h), both forms.
// Any crash, leak or sanitizer report is a bug; what parses must hold no more values than
// the file has bytes for (every value comes from four of them, or is a filled one of an
// entry whose sums the file holds).
#include <cstdint>

#include "formats/gguf/imatrix.h"

using namespace amn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ParseLimits limits;
  limits.max_single_alloc = 64 << 20;
  limits.max_total_bytes = 256 << 20;
  auto m = parse_imatrix(std::span<const uint8_t>(data, size), limits);
  if (!m) return 0;
  if (m->entries.empty() && m->legacy) __builtin_trap();  // the legacy form has at least one entry
  uint64_t values = 0;
  for (const auto& [name, v] : m->entries) values += v.size();
  if (values * 4 > size) __builtin_trap();
  return 0;
}
