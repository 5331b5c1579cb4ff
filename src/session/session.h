// A session: one model opened sans-IO, and the plans made from it. The WASM bindings
// wrap it for the npm package (docs/session-protocol.md): files are declared by name
// and size, bytes arrive when a call answers need_bytes, and each piece's output is
// handed over before the next. All policy (options, limits, layouts, JSON views) lives
// here and below; the bindings only convert values.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "convert/execute.h"
#include "convert/plan.h"
#include "convert/plan_forget.h"
#include "convert/shard.h"
#include "core/error.h"
#include "core/limits.h"
#include "report/model_diff.h"
#include "report/model_hash.h"
#include "report/value_stats.h"
#include "session/output.h"
#include "core/model.h"
#include "core/source.h"
#include "session/request.h"

namespace amn {

class Session {
 public:
  // limits_json: as limits_from_json takes it ("" or "{}": the defaults). A bad one is
  // reported by parse(), the first call that can fail.
  explicit Session(std::string_view limits_json);

  uint32_t add_file(const std::string& name, uint64_t size);  // a SparseSource
  Status add_bytes(uint32_t file, uint64_t offset, SparseSource::Buffer bytes, uint64_t length);

  // Opens the model from the declared files (file 0 is the entry). need_bytes /
  // need_files: supply them and call again.
  Status parse();
  // A model opened before its config files were looked for (session/open.h
  // read_late_config): whether they could change what parse() found (then declare those
  // present and parse again), and, when not, reading the ones declared since.
  bool config_matters() const;
  Status read_late_config();
  const Model* model() const { return model_ ? &*model_ : nullptr; }
  std::string info_json() const;
  std::string render_text(std::string_view kind) const;  // "inspect" or "parse"
  // What forget({ like: this model }) writes, "gguf" or "safetensors" (like_writes_gguf);
  // "" before parse().
  std::string like_output_format() const;

  // A conversion from its JSON request (session/request.h, the npm API's options) into
  // `destination` ("path" | "per_file" | "single", output.h): one file, or one per shard
  // when the output layout (output_layout) is a folder of shards.
  Status plan_convert(std::string_view request_json, std::string_view destination = "path");
  Status plan_convert(const ConvertRequest& request, Destination destination = Destination::path);
  // A forget (quantization) from its JSON request ({"scheme", ...}: session/request.h)
  // into `destination` (as plan_convert's). Before the header: every prepare (need_bytes
  // like a piece), then finish_prepared(), which for a folder output cuts the model into
  // its files (shards_info_json, select_shard, as a convert's). With "like" in the
  // request, `like` is the session of the reference model (opened apart): its scales are
  // read through its files (need_bytes names its files).
  Status plan_forget(std::string_view request_json, Session* like = nullptr, std::string_view destination = "path");
  // With "imatrix" in a forget request: the importance matrix file's bytes, parsed here
  // (formats/gguf/imatrix.h) within the session's limits, before plan_forget.
  Status set_imatrix(std::span<const uint8_t> bytes);
  // With "tensorTypeFile" in a forget request: the file's text (add_tensor_type_file),
  // before plan_forget.
  void set_tensor_type_file(std::string text) { tensor_type_file_ = std::move(text); }
  size_t prepare_count() const;
  Status run_prepare(size_t i);
  Status finish_prepared();
  // After every piece: the Lethe distance (report/lethe.h) as JSON and as the CLI's text,
  // and the output folder's config.json ("" when the input has no config.json).
  std::string forget_report_json() const;
  std::string forget_report_text() const;
  std::string forget_config_json() const;

  // One tensor, cast to `to` ("" keeps the stored dtype, or a logical tensor's natural one).
  Status plan_tensor(const std::string& name, std::string_view to);
  // Value statistics of one tensor (report/value_stats.h): plan_stats, then every
  // run_stats_step (need_bytes like a piece), then stats_json (the npm model.stats result)
  // or stats_text (amn stats's text for it). StatsDetail::page adds the page's detail
  // fields (the first values, a finer histogram, the heatmap) to stats_json.
  Status plan_stats(const std::string& name, StatsDetail detail = StatsDetail::cli);
  size_t stats_step_count() const { return stats_ ? stats_->steps() : 0; }
  Status run_stats_step(size_t i);
  std::string stats_json() const { return stats_ ? stats_json_one(stats_->stats()) : "null"; }
  std::string stats_text() const { return stats_ ? render_stats(stats_->stats()) : ""; }
  // The names amn stats covers when none is given, as a JSON array.
  std::string stats_names_json() const;
  // amn hash (report/model_hash.h): plan_hash, every run_hash_step in order (need_bytes
  // like a piece), then hash_json, or hash_text (gguf_path non-empty: gguf-hash's lines
  // naming that path). values: hash the remembered values (--dequantized), not the stored bytes.
  Status plan_hash(HashOf of = HashOf::stored);
  size_t hash_step_count() const { return hash_ ? hash_->steps() : 0; }
  Status run_hash_step(size_t i);
  std::string hash_json() const { return hash_ ? amn::hash_json(hash_->result()) : "null"; }
  std::string hash_text(const std::string& gguf_path) const;
  // amn diff (report/model_diff.h) of this session's model (A) against `other`'s (B):
  // plan_diff, every run_diff_step in order (need_bytes for the files of the session
  // diff_step_side(i) names: 0 this one, 1 `other`), then diff_json, diff_text (the CLI's
  // table) and diff_exit_status (0 identical, 3 different).
  Status plan_diff(const Session& other, const DiffOptions& options = {});
  size_t diff_step_count() const { return diff_ ? diff_->steps() : 0; }
  int diff_step_side(size_t i) const { return diff_ ? diff_->side(i) : 0; }
  Status run_diff_step(size_t i, Session& other);
  std::string diff_json() const { return diff_ ? amn::diff_json(diff_->result()) : "null"; }
  std::string diff_text() const { return diff_ ? render_diff(diff_->result()) : ""; }
  int diff_exit_status() const { return diff_ ? amn::diff_exit_status(diff_->result()) : 1; }
  // The output policy (output.h output_plan_json) with this session's model, which
  // remember's default name depends on.
  std::string output_plan_json(std::string_view json) const;
  // The files of the convert plan (views.h shards_info_json): its shards, or the one
  // file ("model.safetensors", index null); "null" without a convert plan.
  std::string shards_info_json() const;
  Status select_shard(size_t k);
  std::string plan_info_json() const;  // "null" without a plan

  const std::vector<uint8_t>& output_header() const;
  size_t piece_count() const;
  Status run_piece(size_t i);
  const std::vector<uint8_t>& piece_output() const { return output_; }
  // Frees the bytes supplied so far and the last piece's output (a layer's shared
  // scheme inputs are kept: the next piece of the layer reuses them).
  void release_data();

 private:
  const Plan* plan() const {
    if (!plans_.empty()) return current_ < plans_.size() ? &plans_[current_] : nullptr;
    return forget_ ? &forget_->plan : nullptr;
  }
  void clear_plans();
  void take_shards(ShardedPlan split);
  // What a folder output's split GGUF files are named after: request.output's name, else
  // the default folder name for the entry file.
  std::string folder_name(const ConvertRequest& request) const;

  ParseLimits limits_;
  std::optional<Error> bad_limits_;
  FileSet files_;
  std::vector<SparseSource*> sparse_;  // owned by files_
  std::optional<Model> model_;
  std::vector<Plan> plans_;            // one plan, or one per shard
  std::optional<StatsRun> stats_;
  std::optional<HashRun> hash_;
  std::optional<DiffRun> diff_;
  std::optional<ForgetPlan> forget_;   // a forget's plan (plans_: its files, once prepared, for a folder)
  std::optional<ConvertRequest> forget_folder_;  // a forget into a folder: its request
  std::shared_ptr<const ImportanceMatrix> imatrix_;  // set_imatrix's
  std::optional<std::string> tensor_type_file_;      // set_tensor_type_file's
  std::vector<std::string> shard_names_;  // empty unless sharded
  std::string index_json_;
  uint64_t total_size_ = 0;
  size_t current_ = 0;
  std::vector<uint8_t> output_;
  SchemeInputCache scheme_inputs_;
  const std::vector<uint8_t> empty_;
};

}  // namespace amn
