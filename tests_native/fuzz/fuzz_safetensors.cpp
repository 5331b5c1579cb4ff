// libFuzzer target: the safetensors parser through both source kinds (memory and the
// sparse, need_bytes-driven one), then a plan + execution of what parsed, then a
// re-parse of the header we would write. Any crash, leak or sanitizer report is a bug.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "convert/execute.h"
#include "convert/plan.h"
#include "session/open.h"
#include "formats/safetensors/write.h"
#include "sparse_feed.h"

using namespace amn;

namespace {

struct NullSink : Sink {
  Status write(std::span<const uint8_t>) override { return {}; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ParseLimits limits;
  limits.max_single_alloc = 64 << 20;
  FileSet set;
  set.add("model.safetensors", std::make_unique<MemorySource>(std::span<const uint8_t>(data, size)));
  auto model = open_model(set, limits);
  (void)fuzz::parse_sparse(data, size, "model.safetensors", [](FileSet& set) { return open_model(set, {}); });
  if (!model) return 0;
  if (model->tensor_bytes() > (8u << 20)) return 0;  // keep each execution fast
  for (auto dtype : {std::optional<DType>(), std::optional<DType>(DType::BF16), std::optional<DType>(DType::F16)}) {
    auto plan = plan_convert(*model, cast_options(dtype));
    if (!plan) continue;
    NullSink sink;
    if (!execute_plan(*plan, set, sink)) __builtin_trap();  // a parsed file must convert
    // What we write must parse back (header plus a zeroed data section).
    std::vector<uint8_t> out = plan->header;
    out.resize(plan->output_bytes());
    FileSet again;
    again.add("out.safetensors", std::make_unique<MemorySource>(out));
    auto reparsed = open_model(again, {});
    if (!reparsed || reparsed->tensors.size() != model->tensors.size()) __builtin_trap();
  }
  return 0;
}
