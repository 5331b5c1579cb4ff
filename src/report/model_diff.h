// Comparing two models tensor by tensor (amn diff, npm diff, the page's Compare view;
// docs/cli.md "diff" defines every number). Tensors are matched by name, a quantized weight
// by its logical name; a GGUF against a Hugging Face-named model also through
// llama.cpp's renaming (report/gguf_names.h), q / k rows put back in one order. Both
// sides are read through their one-tensor plans (values as F32, as amn stats reads them)
// and compared piece by piece as the pieces arrive, so memory is a few pieces (a head's
// rows for a permuted q / k), never a tensor, let alone a model.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "convert/execute.h"
#include "convert/plan.h"
#include "core/error.h"
#include "core/model.h"
#include "core/source.h"

namespace amn {

enum class DiffStatus : uint8_t {
  identical,       // same stored type and shape, every value bit-identical
  same_values,     // stored differently (dtype / scheme / row order), every value equal
  different,       // values differ
  shape_mismatch,  // same name, different shapes: values not compared
  only_in_a,
  only_in_b,
  not_compared,    // values neither side's reader can describe (`skipped` says why)
};
std::string_view diff_status_name(DiffStatus s);

struct TensorDiff {
  std::string name;              // A's name (B's, for a tensor only B has)
  std::string name_b;            // B's name when matched through the GGUF <-> HF names; else empty
  bool rows_permuted = false;    // matched with llama.cpp's q / k row permutation undone
  DiffStatus status = DiffStatus::identical;
  std::string dtype_a, dtype_b;  // as stored ("Q4_K", "BF16", a scheme's name); "" when absent
  std::vector<uint64_t> shape_a, shape_b;
  std::string skipped;           // not_compared: why
  uint64_t elements = 0;         // pairs compared
  uint64_t equal = 0;            // pairs equal (a == b, or both NaN)
  uint64_t bit_equal = 0;        // pairs with the same bits in the read form (F32, or the stored ints / F64)
  uint64_t nonfinite = 0;        // pairs where either side is NaN or ±Inf: left out of every sum
  uint64_t nonfinite_mismatch = 0;  // of those, pairs that are not both NaN, both +Inf or both -Inf
  uint64_t finite = 0;           // pairs in the sums
  double max_abs = 0, sum_abs = 0, sum_sq_diff = 0, sum_aa = 0, sum_bb = 0, sum_ab = 0;
  bool compared() const;         // the value fields mean something
  double mae() const;            // NaN when nothing finite was compared
  double rmse() const;
  double cosine() const;         // both norms 0: 1; one norm 0: 0
  double snr_db() const;         // 10 log10(Σa² / Σ(a-b)²); +Inf when nothing differs, -Inf when A is all 0 (JSON null)
};

struct ModelDiff {
  std::vector<TensorDiff> tensors;  // A's order, then the tensors only B has, in B's order
  // The GGUF side's architecture when some tensors were matched through its GGUF <->
  // Hugging Face names (tensors with name_b); empty when none were.
  std::string name_map;
  bool identical() const;           // every tensor identical (and none missing)
};

struct DiffOptions {
  // A GGUF of a known architecture (report/gguf_names.h) against a model without GGUF
  // names: match the names llama.cpp's converter renamed. false: plain names only.
  bool map_names = true;
};

// The two models' comparison as a run of steps: each reads one piece of one side (A = 0,
// B = 1) and compares what both sides have read so far. Sans-IO: a step may answer
// need_bytes (for side(i)'s files); call it again once the bytes are there.
class DiffRun {
 public:
  static Result<DiffRun> start(const Model& a, const Model& b, const DiffOptions& options = {});
  size_t steps() const { return steps_.size(); }
  int side(size_t i) const { return i < steps_.size() ? steps_[i].side : 0; }
  Status step(size_t i, FileSet& files_a, FileSet& files_b);
  const ModelDiff& result() const { return diff_; }

 private:
  struct Step { uint32_t pair; uint8_t side; uint32_t piece; bool last; };  // last: the pair's last step
  // heads > 0: side `gguf_side`'s rows are LlamaModel.permute's order, compared a head
  // (rows / heads rows) at a time.
  struct Pair { size_t tensor; Plan plans[2]; uint32_t heads = 0; uint8_t gguf_side = 0; };
  struct Side { std::vector<uint8_t> bytes; size_t used = 0; SchemeInputCache cache; };
  void compare_ready(Pair& pair);
  void finish(Pair& pair);

  ModelDiff diff_;
  std::vector<Pair> pairs_;
  std::vector<Step> steps_;
  Side sides_[2];
  size_t current_pair_ = SIZE_MAX;
};

// Runs every step (the native CLI, whose files answer every read).
Result<ModelDiff> model_diff(const Model& a, FileSet& files_a, const Model& b, FileSet& files_b,
                             const DiffOptions& options = {});

// {"identical", "tensors": [{name, name_b (only when matched through the GGUF <-> HF
// names), status, dtype_a, dtype_b, shape_a, shape_b, elements, equal, max_abs_diff, mae,
// rmse, cosine, snr_db, nonfinite, nonfinite_mismatch, skipped (only when set)}],
// "name_map" (only when some names were mapped)} (docs/json-schema.md "diff").
std::string diff_json(const ModelDiff& diff);
// The CLI's table: one row per tensor, then a summary line.
std::string render_diff(const ModelDiff& diff);
// The CLI's exit status for a finished comparison: 0 identical, 3 something differs.
int diff_exit_status(const ModelDiff& diff);

}  // namespace amn
