// Value statistics of one tensor (amn stats, npm model.stats, docs/cli.md): min, max,
// mean, std, NaN / ±Inf / zero counts and a histogram of its values, dequantized or cast
// to F32 (any format, any scheme: the plan_tensor pieces). Computed by streaming the
// plan's pieces twice, never holding the tensor: the first pass gives the moments and the
// range, the second the histogram over that range. Memory: one piece.
//
// The page's detail view asks for more (StatsDetail::page, npm model.stats(name, {detail:
// true})): the first values, exact 64-bit integer extremes, a finer histogram and a heatmap
// grid, all from the same two passes, so a 1 GiB tensor costs the tab one piece plus a
// bounded grid, not the tensor.
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
// The page's detail view: its histogram's bins, the values it lists, and the heatmap's
// largest side in cells (a 2-D weight, or an N-D one as shape[0] x the rest).
inline constexpr size_t kDetailBins = 64;
inline constexpr size_t kDetailHead = 16;
inline constexpr uint64_t kHeatmapCells = 256;

// Statistics read a plain tensor (copied, cast or a GGUF block type) in pieces of at most
// this many bytes of output: a browser tab then holds ~3 MiB of a tensor at a time (the
// read buffer, the input and the values), whatever its size. 4 MiB pieces held ~12 MiB and
// took a 1 GiB tensor's detail to the edge of issue 17's 64 MiB (tests_js/browser/
// detail-memory.test.mjs); natively the smaller pieces cost nothing measurable (amn stats
// of a 256 MiB F32 tensor: 0.41 s either way). Other pieces (gathered, quantized schemes)
// keep the plan's size.
inline constexpr uint64_t kStatsPieceBytes = 1u << 20;

enum class StatsDetail : uint8_t { cli, page };

// A downsampled picture of a 2-D weight: cell (i, j) covers rows [ceil(i*rows/cell_rows),
// ceil((i+1)*rows/cell_rows)) and likewise columns; it sums the finite values it covers.
struct Heatmap {
  uint64_t rows = 0, cols = 0, cell_rows = 0, cell_cols = 0;
  std::vector<double> sum, sum_abs;
  std::vector<uint64_t> count;
};

struct ValueStats {
  std::string name, dtype;  // dtype: as stored (or the scheme's, for a logical tensor)
  std::vector<uint64_t> shape;
  // Set when the values are not described (complex, or an F8/F6/F4 dtype stored as such:
  // no cast to F32 yet); the counts are then all zero.
  std::string skipped;
  uint64_t count = 0, nan = 0, pos_inf = 0, neg_inf = 0, zeros = 0, finite = 0;
  double min = 0, max = 0, sum = 0, sum_sq = 0;  // over the finite values
  std::vector<uint64_t> histogram;  // kStatsBins (page: kDetailBins) equal bins over [min, max] (finite values)
  // Page detail only: what the values are read as (F32, or an integer dtype as stored),
  // the first kDetailHead values' bytes in that dtype (a skipped tensor: its first stored
  // bytes), the stored bytes of a skipped tensor, the exact extremes of 64-bit integers,
  // and the heatmap (empty cells when the tensor is not 2-D or wider).
  StatsDetail detail = StatsDetail::cli;
  DType values_dtype = DType::F32;
  std::vector<uint8_t> head;
  uint64_t stored_bytes = 0;
  int64_t int_min = 0, int_max = 0;     // I64
  uint64_t uint_min = 0, uint_max = 0;  // U64
  Heatmap heatmap;
  double mean() const;
  double std() const;  // population standard deviation
};

// One tensor's two passes over its F32 pieces. steps() = 2 × the plan's pieces; step(i)
// runs one (sans-IO: may answer need_bytes; call it again once the bytes are there). A
// skipped tensor has no step, or for the page one: its first piece, for the first bytes.
class StatsRun {
 public:
  static Result<StatsRun> start(const Model& model, std::string_view name, StatsDetail detail = StatsDetail::cli);
  size_t steps() const;
  Status step(size_t i, FileSet& files, SchemeInputCache* cache = nullptr);
  const ValueStats& stats() const { return stats_; }
  const Plan& plan() const { return plan_; }

 private:
  Plan plan_;
  ValueStats stats_;
  std::vector<uint8_t> buffer_;
  uint64_t seen_ = 0;  // values of the first pass so far (the heatmap's position)
  uint64_t row_ = 0, col_ = 0, cell_row_ = 0, cell_col_ = 0, next_row_ = 0, next_col_ = 0;
  void first_pass_detail(DType dtype);
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
// object alone for stats_json_one (the npm model.stats result), with the page's detail
// fields (values_dtype, head, int_min / int_max, bytes, heatmap) when it asked for them.
std::string stats_json(std::span<const ValueStats> tensors);
std::string stats_json_one(const ValueStats& s);
// The CLI's text: the numbers and a terminal histogram (one bar per bin).
std::string render_stats(const ValueStats& s);

}  // namespace amn
