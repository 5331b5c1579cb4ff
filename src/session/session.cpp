#include "session/session.h"

#include "core/json.h"
#include "report/lethe.h"
#include "report/report.h"
#include "schemes/detect.h"
#include "schemes/forget_like.h"
#include "session/forget.h"
#include "session/open.h"
#include "session/output.h"
#include "session/views.h"

namespace amn {
namespace {

Error no_model() { return make_error(ErrorCode::invalid_argument, "parse the model first"); }

}  // namespace

Session::Session(std::string_view limits_json) {
  auto limits = limits_from_json(limits_json.empty() ? "{}" : limits_json, Surface::api);
  if (limits) limits_ = *limits;
  else bad_limits_ = limits.error();
}

uint32_t Session::add_file(const std::string& name, uint64_t size) {
  auto source = std::make_unique<SparseSource>(size);
  sparse_.push_back(source.get());
  return files_.add(name, std::move(source));
}

Status Session::add_bytes(uint32_t file, uint64_t offset, SparseSource::Buffer bytes, uint64_t length) {
  if (file >= sparse_.size()) return make_error(ErrorCode::invalid_argument, "no such file");
  return sparse_[file]->add(offset, std::move(bytes), length);
}

Status Session::parse() {
  if (bad_limits_) return *bad_limits_;
  AMN_ASSIGN(auto model, open_model(files_, limits_));
  model_ = std::move(model);
  return {};
}

bool Session::config_matters() const { return model_ && config_matters_at_open(*model_); }

Status Session::read_late_config() {
  if (!model_) return no_model();
  return amn::read_late_config(files_, limits_, *model_);
}

std::string Session::info_json() const { return model_ ? model_info_json(*model_) : std::string(); }

std::string Session::render_text(std::string_view kind) const {
  if (!model_) return {};
  return kind == "parse" ? render_parse(*model_) : render_inspect(*model_);
}

Status Session::plan_convert(std::string_view request_json, std::string_view destination) {
  AMN_ASSIGN(auto request, convert_request_from_json(request_json, Verb::convert, Surface::api));
  AMN_ASSIGN(auto where, destination_from_name(destination));
  return plan_convert(request, where);
}

Status Session::plan_convert(const ConvertRequest& request, Destination destination) {
  if (!model_) return no_model();
  AMN_ASSIGN(auto options, convert_options(request));
  AMN_ASSIGN(auto layout, output_layout(request, model_->sharded, destination, Surface::api));
  clear_plans();
  if (layout.folder && !layout.single) {
    AMN_ASSIGN(auto split, plan_shards(*model_, options, shard_options(request, folder_name(request))));
    take_shards(std::move(split));
    return {};
  }
  AMN_ASSIGN(auto plan, amn::plan_convert(*model_, options));
  plans_.push_back(std::move(plan));
  // One file: named as a one-shard split names it, for a destination that opens a sink
  // per file (openShard with shards: 1).
  shard_names_.emplace_back(kSingleShardName);
  return {};
}

void Session::take_shards(ShardedPlan split) {
  for (auto& s : split.shards) {
    shard_names_.push_back(std::move(s.name));
    plans_.push_back(std::move(s.plan));
  }
  index_json_ = std::move(split.index_json);
  total_size_ = split.total_size;
}

std::string Session::folder_name(const ConvertRequest& request) const {
  if (!request.output.empty()) return request.output;
  return default_output_name(request, output_stem(files_.count() ? files_.name(0) : "model"), true, model());
}

Status Session::plan_forget(std::string_view request_json, Session* like, std::string_view destination) {
  if (!model_) return no_model();
  AMN_ASSIGN(auto request, convert_request_from_json(request_json, Verb::forget, Surface::api));
  if (!request.tensor_type_file.empty()) {
    if (!tensor_type_file_) {
      return make_error(ErrorCode::invalid_argument, option_name(OptionId::tensor_type_file, Surface::api) + ": the file was not read");
    }
    AMN_TRY(add_tensor_type_file(request, *tensor_type_file_, Surface::api));
  }
  AMN_ASSIGN(auto where, destination_from_name(destination));
  AMN_ASSIGN(auto layout, output_layout(request, model_->sharded, where, Surface::api));
  std::shared_ptr<const Forgetter> reference;
  if (!request.like.empty()) {
    if (!like || !like->model_) return make_error(ErrorCode::invalid_argument, "like: an open model is needed");
    AMN_ASSIGN(auto made, make_like_forgetter(*like->model_, like->files_, request.reuse_scales, request.scheme));
    reference = std::shared_ptr<const Forgetter>(std::move(made));
  }
  AMN_ASSIGN(auto plan, plan_forget_request(*model_, request, Surface::api, reference,
                                            request.imatrix.empty() ? nullptr : imatrix_));
  clear_plans();
  forget_ = std::move(plan);
  if (layout.folder) forget_folder_ = std::move(request);
  return {};
}

std::string Session::like_output_format() const {
  if (!model_) return "";
  return like_writes_gguf(*model_) ? "gguf" : "safetensors";
}

Status Session::set_imatrix(std::span<const uint8_t> bytes) {
  if (bad_limits_) return *bad_limits_;
  AMN_ASSIGN(auto parsed, parse_imatrix(bytes, limits_));
  imatrix_ = std::make_shared<const ImportanceMatrix>(std::move(parsed));
  return {};
}

size_t Session::prepare_count() const { return forget_ ? forget_->plan.prepares.size() : 0; }

Status Session::run_prepare(size_t i) {
  if (!forget_) return make_error(ErrorCode::invalid_argument, "no forget planned");
  return amn::run_prepare(forget_->plan, i, files_, &scheme_inputs_);
}

Status Session::finish_prepared() {
  if (!forget_) return make_error(ErrorCode::invalid_argument, "no forget planned");
  if (!forget_->plan.prepares.empty()) amn::finish_prepared(forget_->plan);
  if (forget_folder_ && plans_.empty()) {
    AMN_ASSIGN(auto split, forget_output_files(*forget_, *forget_folder_, folder_name(*forget_folder_)));
    take_shards(std::move(split));
  }
  return {};
}

std::string Session::forget_report_json() const { return forget_ ? lethe_json(*forget_) : "null"; }
std::string Session::forget_report_text() const { return forget_ ? render_lethe(*forget_) : ""; }
std::string Session::forget_config_json() const {
  return forget_ && model_ ? amn::forget_config_json(*model_, *forget_->forgetter) : "";
}

Status Session::plan_tensor(const std::string& name, std::string_view to) {
  if (!model_) return no_model();
  std::optional<DType> dtype;
  if (!to.empty()) {
    AMN_ASSIGN(dtype, float_target(to, OptionId::to, Surface::api));
  }
  AMN_ASSIGN(auto plan, amn::plan_tensor(*model_, name, dtype));
  clear_plans();
  plans_.push_back(std::move(plan));
  return {};
}

Status Session::plan_stats(const std::string& name, StatsDetail detail) {
  if (!model_) return no_model();
  stats_.reset();
  AMN_ASSIGN(auto run, StatsRun::start(*model_, name, detail));
  stats_.emplace(std::move(run));
  return {};
}

Status Session::run_stats_step(size_t i) {
  if (!stats_) return make_error(ErrorCode::invalid_argument, "no statistics planned");
  return stats_->step(i, files_, &scheme_inputs_);
}

Status Session::plan_hash(HashOf of) {
  if (!model_) return no_model();
  hash_.reset();
  AMN_ASSIGN(auto run, HashRun::start(*model_, of));
  hash_.emplace(std::move(run));
  return {};
}

Status Session::run_hash_step(size_t i) {
  if (!hash_) return make_error(ErrorCode::invalid_argument, "no hash planned");
  return hash_->step(i, files_, &scheme_inputs_);
}

Status Session::plan_diff(const Session& other, const DiffOptions& options) {
  if (!model_ || !other.model_) return no_model();
  diff_.reset();
  AMN_ASSIGN(auto run, DiffRun::start(*model_, *other.model_, options));
  diff_.emplace(std::move(run));
  return {};
}

Status Session::run_diff_step(size_t i, Session& other) {
  if (!diff_) return make_error(ErrorCode::invalid_argument, "no diff planned");
  return diff_->step(i, files_, other.files_);
}

std::string Session::hash_text(const std::string& gguf_path) const {
  if (!hash_) return "";
  return gguf_path.empty() ? render_hash(hash_->result()) : render_gguf_hash(hash_->result(), gguf_path);
}

std::string Session::stats_names_json() const {
  JsonWriter w;
  w.begin_array();
  if (model_) {
    for (const auto& n : stats_tensor_names(*model_)) w.value(n);
  }
  return w.end_array().take();
}

std::string Session::output_plan_json(std::string_view json) const {
  return amn::output_plan_json(json, model());
}

std::string Session::shards_info_json() const {
  if (shard_names_.empty()) return "null";  // no convert plan (none yet, or a tensor's)
  return amn::shards_info_json(shard_names_, plans_, index_json_, total_size_);
}

Status Session::select_shard(size_t k) {
  if (k >= plans_.size()) return make_error(ErrorCode::invalid_argument, "no such shard");
  current_ = k;
  return {};
}

std::string Session::plan_info_json() const { return plan() ? amn::plan_info_json(*plan()) : "null"; }

const std::vector<uint8_t>& Session::output_header() const { return plan() ? plan()->header : empty_; }

size_t Session::piece_count() const { return plan() ? plan()->pieces.size() : 0; }

Status Session::run_piece(size_t i) {
  const Plan* p = plan();
  if (!p || i >= p->pieces.size()) return make_error(ErrorCode::invalid_argument, "no such piece");
  output_.resize(p->pieces[i].out_length);
  return amn::run_piece(*p, i, files_, output_, &scheme_inputs_);
}

void Session::release_data() {
  for (auto* s : sparse_) s->clear();
  output_.clear();
  output_.shrink_to_fit();
}

void Session::clear_plans() {
  plans_.clear();
  forget_.reset();
  forget_folder_.reset();
  shard_names_.clear();
  index_json_.clear();
  total_size_ = 0;
  current_ = 0;
}

}  // namespace amn
