// libFuzzer target: a .pth file (ZIP or legacy torch.save) through both source kinds
// (memory, and the sparse, need_bytes-driven one, which must converge and reach the same
// verdict), then checks of what parsed: every stored tensor's bytes lie inside the file.
#include <cstdint>
#include <memory>

#include "formats/pth/parse.h"
#include "sparse_feed.h"

using namespace amn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ParseLimits limits;
  limits.max_single_alloc = 16 << 20;
  limits.max_total_bytes = 64 << 20;
  limits.max_item_count = 100'000;
  FileSet set;
  set.add("model.pt", std::make_unique<MemorySource>(std::span<const uint8_t>(data, size)));
  auto m = parse_pth(set, 0, limits);
  auto s = fuzz::parse_sparse(data, size, "model.pt", [&](FileSet& set) { return parse_pth(set, 0, limits); });
  if (m.ok() != s.ok()) __builtin_trap();
  if (!m) {
    if (m.error().message != s.error().message) __builtin_trap();
    return 0;
  }
  if (m->tensors.size() != s->tensors.size() || m->details_json != s->details_json) __builtin_trap();
  for (const auto& t : m->tensors) {
    if (t.offset > size || t.nbytes > size - t.offset) __builtin_trap();
    if (!t.strides.empty() && t.strides.size() != t.shape.size()) __builtin_trap();
  }
  return 0;
}
