// libFuzzer target: the NPY header parser (a standalone .npy) and the .npz reader (the
// ZIP reader, then an NPY header per entry, inflating the compressed ones), each through a
// memory source and through the sparse, need_bytes-driven one, which must converge and
// reach the same verdict. Then checks of what parsed: every stored record lies inside the
// file and its size matches dtype × elements; strides span exactly the storage.
#include <cstdint>
#include <memory>

#include "formats/npy/npy.h"
#include "sparse_feed.h"

using namespace amn;

namespace {

template <class Parse>
void run(const uint8_t* data, size_t size, const char* name, Parse parse) {
  ParseLimits limits;
  limits.max_single_alloc = 64 << 20;
  limits.max_total_bytes = 256 << 20;
  FileSet set;
  set.add(name, std::make_unique<MemorySource>(std::span<const uint8_t>(data, size)));
  auto m = parse(set, limits);
  auto s = fuzz::parse_sparse(data, size, name, [&](FileSet& set) { return parse(set, limits); });
  if (m.ok() != s.ok()) __builtin_trap();
  if (!m) {
    if (m.error().message != s.error().message) __builtin_trap();
    return;
  }
  for (const auto& t : m->tensors) {
    if (t.shape.size() > kHardMaxDims) __builtin_trap();
    if (t.offset > size || t.nbytes > size - t.offset) __builtin_trap();
    uint64_t elements = 1;
    for (uint64_t d : t.shape) elements *= d;  // bounded by the parser's overflow checks
    if (elements != t.elements) __builtin_trap();
    const uint64_t bytes = elements * dtype_info(t.dtype).block_bytes;
    if (t.deflated) {
      if (t.inflated_skip > t.inflated_size || bytes > t.inflated_size - t.inflated_skip) __builtin_trap();
    } else if (bytes != t.nbytes) {
      __builtin_trap();
    }
    if (!t.strides.empty()) {
      if (t.strides.size() != t.shape.size()) __builtin_trap();
      uint64_t last = 0;  // the offset of the last element, in elements
      for (size_t i = 0; i < t.shape.size(); ++i) {
        if (t.shape[i] > 0) last += (t.shape[i] - 1) * t.strides[i];
      }
      if (elements > 0 && last + 1 != elements) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  run(data, size, "array.npy", [](FileSet& set, const ParseLimits& l) { return parse_npy(set, 0, l); });
  run(data, size, "arrays.npz", [](FileSet& set, const ParseLimits& l) { return parse_npz(set, 0, l); });
  return 0;
}
