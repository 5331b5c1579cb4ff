// libFuzzer target: the safetensors parser through both source kinds (memory and the
// sparse, need_bytes-driven one), then a plan + execution of what parsed, then a
// re-parse of the header we would write. Any crash, leak or sanitizer report is a bug.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "convert/execute.h"
#include "convert/plan.h"
#include "formats/open.h"
#include "formats/safetensors/write.h"

using namespace amn;

namespace {

struct NullSink : Sink {
  Status write(std::span<const uint8_t>) override { return {}; }
};

void parse_sparse(const uint8_t* data, size_t size) {
  FileSet set;
  auto owned = std::make_unique<SparseSource>(size);
  SparseSource* sparse = owned.get();
  set.add("model.safetensors", std::move(owned));
  for (int round = 0; round < 8; ++round) {
    auto m = open_model(set, {});
    if (m || m.error().code != ErrorCode::need_bytes) return;
    for (const auto& r : m.error().need_bytes) {
      if (r.offset > size || r.length > size - r.offset) __builtin_trap();  // asked past the end
      (void)sparse->add_copy(r.offset, {data + r.offset, static_cast<size_t>(r.length)});
    }
  }
  __builtin_trap();  // the sparse loop must converge
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ParseLimits limits;
  limits.max_single_alloc = 64 << 20;
  FileSet set;
  set.add("model.safetensors", std::make_unique<MemorySource>(std::span<const uint8_t>(data, size)));
  auto model = open_model(set, limits);
  parse_sparse(data, size);
  if (!model) return 0;
  if (model->tensor_bytes() > (8u << 20)) return 0;  // keep each execution fast
  for (auto dtype : {std::optional<DType>(), std::optional<DType>(DType::BF16), std::optional<DType>(DType::F16)}) {
    auto plan = plan_convert(*model, {dtype});
    if (!plan) continue;
    auto header = safetensors_header(plan->tensors, plan->metadata);
    NullSink sink;
    if (!execute_plan(*plan, header, set, sink)) __builtin_trap();  // a parsed file must convert
    // What we write must parse back (header plus a zeroed data section).
    std::vector<uint8_t> out = header;
    out.resize(header.size() + plan->data_bytes);
    FileSet again;
    again.add("out.safetensors", std::make_unique<MemorySource>(out));
    auto reparsed = open_model(again, {});
    if (!reparsed || reparsed->tensors.size() != model->tensors.size()) __builtin_trap();
  }
  return 0;
}
