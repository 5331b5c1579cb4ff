// libFuzzer target: scheme detection and companion parsing. The input is a config.json
// and a safetensors file: [u16 little-endian config length][config][safetensors]; a NUL
// byte inside the config part splits it into config.json and quantize_config.json (the
// quantizer's own file, which detection prefers: schemes/quant_config.h). All are
// opened through a memory source and through sparse sources driven by their own
// need_bytes answers (a bitsandbytes quant_state is read at detection); the two must agree
// on what they detect. Then every conversion piece whose output is at most 1 MiB runs.
// Any crash, leak or sanitizer report is a bug; a piece may fail (data-dependent checks
// such as a non-finite global scale), but never with need_bytes against a memory source.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "convert/execute.h"
#include "convert/plan.h"
#include "session/open.h"

using namespace amn;

namespace {

constexpr uint64_t kMaxPieceOut = 1u << 20;

struct Split {
  std::span<const uint8_t> model;
  std::vector<std::pair<const char*, std::span<const uint8_t>>> files;  // after the model, in order
};

Split split(const uint8_t* data, size_t size) {
  if (size < 2) return {{data, size}, {}};
  const size_t n = std::min<size_t>(data[0] | (size_t{data[1]} << 8), size - 2);
  Split out{{data + 2 + n, size - 2 - n}, {}};
  const std::span<const uint8_t> config(data + 2, n);
  const auto nul = std::find(config.begin(), config.end(), uint8_t{0});
  const auto before = config.first(static_cast<size_t>(nul - config.begin()));
  if (!before.empty()) out.files.push_back({"config.json", before});
  if (nul != config.end()) {
    const auto after = config.subspan(before.size() + 1);
    if (!after.empty()) out.files.push_back({"quantize_config.json", after});
  }
  return out;
}

std::span<const uint8_t> bytes_of(const Split& in, uint32_t file) {
  if (file == 0) return in.model;
  if (file > in.files.size()) __builtin_trap();
  return in.files[file - 1].second;
}

void add_files(FileSet& set, const Split& in, bool sparse) {
  for (uint32_t i = 0; i <= in.files.size(); ++i) {
    const char* name = i == 0 ? "model.safetensors" : in.files[i - 1].first;
    const auto bytes = bytes_of(in, i);
    if (sparse) set.add(name, std::make_unique<SparseSource>(bytes.size()));
    else set.add(name, std::make_unique<MemorySource>(bytes));
  }
}

// Opens through sparse sources, answering each need_bytes as the JS readers do. The loop
// must converge and never ask for bytes past the end of a file.
Result<Model> open_sparse(const Split& in, const ParseLimits& limits) {
  FileSet set;
  add_files(set, in, true);
  for (int round = 0; round < 64; ++round) {
    auto model = open_model(set, limits);
    if (model || model.error().code != ErrorCode::need_bytes) return model;
    for (const auto& r : model.error().need_bytes) {
      const auto bytes = bytes_of(in, r.file);
      if (r.offset > bytes.size() || r.length > bytes.size() - r.offset) __builtin_trap();
      auto* source = static_cast<SparseSource*>(&set.source(r.file));
      (void)source->add_copy(r.offset, bytes.subspan(static_cast<size_t>(r.offset), static_cast<size_t>(r.length)));
    }
  }
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Split in = split(data, size);
  ParseLimits limits;
  limits.max_single_alloc = 64 << 20;
  FileSet set;
  add_files(set, in, false);
  auto model = open_model(set, limits);
  auto sparse = open_sparse(in, limits);
  if (static_cast<bool>(model) != static_cast<bool>(sparse)) __builtin_trap();
  if (!model) return 0;
  if (model->logical.size() != sparse->logical.size()) __builtin_trap();
  for (size_t i = 0; i < model->logical.size(); ++i) {
    if (model->logical[i].name != sparse->logical[i].name || model->logical[i].error != sparse->logical[i].error)
      __builtin_trap();
  }
  for (const auto& l : model->logical) {
    (void)l.bits_per_weight();
    if (l.error.empty() && !l.op) __builtin_trap();  // a usable logical tensor has its op
  }
  (void)model->parameter_count();
  for (auto dtype : {std::optional<DType>(), std::optional<DType>(DType::F16)}) {
    auto plan = plan_convert(*model, cast_options(dtype));
    if (!plan) continue;
    std::vector<uint8_t> out;
    for (size_t i = 0; i < plan->pieces.size(); ++i) {
      if (plan->pieces[i].out_length > kMaxPieceOut) continue;
      out.assign(static_cast<size_t>(plan->pieces[i].out_length), 0);
      auto run = run_piece(*plan, i, set, out);
      if (!run && run.error().code == ErrorCode::need_bytes) __builtin_trap();
    }
  }
  return 0;
}
