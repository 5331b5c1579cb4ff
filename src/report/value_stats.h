// Value statistics of one tensor (amn stats, npm model.stats, docs/cli.md): min, max,
// mean, std, NaN / ±Inf / zero counts and a histogram of its values, dequantized or cast
// to F32 (any format, any scheme: the plan_tensor pieces). Computed by streaming the
// plan's pieces twice, never holding the tensor: the first pass gives the moments and the
// range, the second the histogram over that range. Memory: one piece.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "convert/execute.h"
#include "convert/plan.h"
#include "core/error.h"
#include "core/model.h"
#include "core/source.h"

namespace amn {

inline constexpr size_t kStatsBins = 20;

struct ValueStats {
  std::string name, dtype;  // dtype: as stored (or the scheme's, for a logical tensor)
  std::vector<uint64_t> shape;
  // Set when the values are not described (complex, or an F8/F6/F4 dtype stored as such:
  // no cast to F32 yet); the counts are then all zero.
  std::string skipped;
  uint64_t count = 0, nan = 0, pos_inf = 0, neg_inf = 0, zeros = 0, finite = 0;
  double min = 0, max = 0, sum = 0, sum_sq = 0;  // over the finite values
  std::vector<uint64_t> histogram;  // kStatsBins equal bins over [min, max] (finite values)
  double mean() const;
  double std() const;  // population standard deviation
};

// One tensor's two passes over its F32 pieces. steps() = 2 × the plan's pieces; step(i)
// runs one (sans-IO: may answer need_bytes; call it again once the bytes are there).
class StatsRun {
 public:
  static Result<StatsRun> start(const Model& model, std::string_view name);
  size_t steps() const { return stats_.skipped.empty() ? 2 * plan_.pieces.size() : 0; }
  Status step(size_t i, FileSet& files, SchemeInputCache* cache = nullptr);
  const ValueStats& stats() const { return stats_; }
  const Plan& plan() const { return plan_; }

 private:
  Plan plan_;
  ValueStats stats_;
  std::vector<uint8_t> buffer_;
};

// The names `amn stats` covers when none is given: every tensor the model lists, a
// quantized weight as its one logical tensor (in place of its parts), in file order.
std::vector<std::string> stats_tensor_names(const Model& model);

// What a tensor is stored as: its stored type ("BF16", "Q4_K") or, for a quantized
// weight, its scheme ("gptq"); "" when the model has no such name.
std::string stored_type(const Model& model, std::string_view name);

// Runs every step (the native CLI, whose files answer every read).
Result<ValueStats> tensor_stats(const Model& model, FileSet& files, std::string_view name);

// {"tensors": [{name, dtype, shape, count, min, max, mean, std, nan, pos_inf, neg_inf,
// zeros, histogram: {min, max, counts}, skipped (only when set)}]} (docs/json-schema.md "stats"); one tensor's
// object alone for stats_json_one (the npm model.stats result).
std::string stats_json(std::span<const ValueStats> tensors);
std::string stats_json_one(const ValueStats& s);
// The CLI's text: the numbers and a terminal histogram (one bar per bin).
std::string render_stats(const ValueStats& s);

}  // namespace amn
