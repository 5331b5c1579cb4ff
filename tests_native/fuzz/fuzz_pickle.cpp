// libFuzzer target: the pickle VM with the torch allowlist, then the checkpoint walk
// over whatever it built (shared and cyclic graphs included) and the JSON rendering of
// the root. A window cut short must ask for more when told more may follow, and reach
// the same verdict as the whole stream otherwise. Any crash, leak, sanitizer report or
// unbounded growth is a bug.
#include <cstdint>
#include <vector>

#include "formats/pickle/vm.h"
#include "formats/pth/torch_globals.h"
#include "formats/pth/walk.h"

using namespace amn;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ParseLimits limits;
  limits.max_single_alloc = 16 << 20;
  limits.max_total_bytes = 64 << 20;
  limits.max_item_count = 100'000;
  pickle::Options o;
  o.allowed = pth::torch_global_allowed;
  const std::span<const uint8_t> bytes(data, size);
  auto p = pickle::run(bytes, limits, o);
  if (p) {
    if (p->end > size || p->root >= p->values.size()) __builtin_trap();
    for (bool legacy : {false, true}) {
      auto w = pth::walk_checkpoint(*p, legacy, limits);
      if (w) {
        for (const auto& t : w->tensors) {
          if (t.shape.size() != t.strides.size() || !t.storage.type) __builtin_trap();
        }
      }
    }
    (void)pth::value_json(*p, p->root);
  }
  // The same stream seen through a window that may continue: a run that completed must
  // complete identically; one that ran out must ask for more instead.
  o.more_may_follow = true;
  auto q = pickle::run(bytes, limits, o);
  if (!q && q.error().code == ErrorCode::need_bytes) {
    if (p) __builtin_trap();  // a complete stream never asks for more
  } else {
    if (p.ok() != q.ok()) __builtin_trap();
    if (!p && p.error().message != q.error().message) __builtin_trap();
    if (p && p->end != q->end) __builtin_trap();
  }
  return 0;
}
