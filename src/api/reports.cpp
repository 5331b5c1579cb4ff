// anamnesis::diff, Model::hash and Model::stats: the streamed value reports of `amn diff`,
// `amn hash` and `amn stats` (src/report), run step by step as the CLI runs them, with the
// API's progress callback between steps. This file only copies the core's results into
// the header's std types; every number is the core's.
#include <cmath>
#include <mutex>

#include "api/impl.h"
#include "report/model_diff.h"
#include "report/model_hash.h"
#include "report/value_stats.h"

namespace anamnesis {
namespace {

using Progress = std::function<bool(uint64_t done, uint64_t total)>;

// Runs `step(0 .. steps-1)` in order, telling `progress` after each; false from it cancels.
template <class Step>
amn::Status run_steps(size_t steps, const Progress& progress, Step&& step) {
  for (size_t i = 0; i < steps; ++i) {
    AMN_TRY(step(i));
    if (progress && !progress(i + 1, steps)) return amn::make_error(amn::ErrorCode::cancelled, "cancelled");
  }
  return {};
}

TensorHash public_hash(const amn::TensorHash& h) { return {h.name, h.bytes, h.sha256, h.xxh64, h.sha1}; }

// The numbers `amn diff --json` writes as null are NaN here.
TensorDiff public_diff(const amn::TensorDiff& t) {
  const bool values = t.compared();
  TensorDiff out;
  out.name = t.name;
  out.name_b = t.name_b;
  out.rows_permuted = t.rows_permuted;
  out.status = std::string(amn::diff_status_name(t.status));
  out.dtype_a = t.dtype_a;
  out.dtype_b = t.dtype_b;
  out.shape_a = t.shape_a;
  out.shape_b = t.shape_b;
  out.elements = t.elements;
  out.equal = t.equal;
  out.nonfinite = t.nonfinite;
  out.nonfinite_mismatch = t.nonfinite_mismatch;
  out.max_abs_diff = values && t.finite ? t.max_abs : NAN;
  out.mae = values ? t.mae() : NAN;
  out.rmse = values ? t.rmse() : NAN;
  out.cosine = values ? t.cosine() : NAN;
  out.snr_db = values ? t.snr_db() : NAN;
  out.skipped = t.skipped;
  return out;
}

}  // namespace

Result<TensorStats> Model::stats(const std::string& name) const {
  auto run = amn::StatsRun::start(impl_->local.model, name);
  if (!run) return public_error(run.error());
  amn::SchemeInputCache cache;  // a GPTQ / AWQ layer's pieces share their inputs
  std::lock_guard<std::mutex> lock(impl_->reading);
  for (size_t i = 0; i < run->steps(); ++i) {
    if (auto st = run->step(i, *impl_->local.files, &cache); !st) return public_error(st.error());
  }
  const amn::ValueStats& s = run->stats();
  const bool any = s.finite > 0;  // no finite value: no range (NaN, as the JSON's null)
  TensorStats out;
  out.name = s.name;
  out.dtype = s.dtype;
  out.shape = s.shape;
  out.skipped = s.skipped;
  out.count = s.count;
  out.nan = s.nan;
  out.pos_inf = s.pos_inf;
  out.neg_inf = s.neg_inf;
  out.zeros = s.zeros;
  out.min = any ? s.min : NAN;
  out.max = any ? s.max : NAN;
  out.mean = s.mean();
  out.std = s.std();
  out.histogram = s.histogram;
  return out;
}

Result<HashResult> Model::hash(const HashOptions& options) const {
  auto run = amn::HashRun::start(impl_->local.model, options.dequantized ? amn::HashOf::values : amn::HashOf::stored);
  if (!run) return public_error(run.error());
  amn::SchemeInputCache cache;
  std::lock_guard<std::mutex> lock(impl_->reading);
  auto ran = run_steps(run->steps(), options.progress, [&](size_t i) { return run->step(i, *impl_->local.files, &cache); });
  if (!ran) return public_error(ran.error());
  const amn::ModelHash& h = run->result();
  HashResult out{options.dequantized, {}, public_hash(h.model), h.uuid};
  for (const auto& t : h.tensors) out.tensors.push_back(public_hash(t));
  return out;
}

Result<DiffResult> diff(const Model& a, const Model& b, const DiffOptions& options) {
  amn::DiffOptions how;
  how.map_names = !options.exact_names;
  auto run = amn::DiffRun::start(a.impl_->local.model, b.impl_->local.model, how);
  if (!run) return public_error(run.error());
  // Both models' reads are serialised; a model compared with itself (or a copy) has one lock.
  std::unique_lock<std::mutex> lock_a(a.impl_->reading, std::defer_lock), lock_b(b.impl_->reading, std::defer_lock);
  if (a.impl_ == b.impl_) lock_a.lock();
  else std::lock(lock_a, lock_b);
  auto ran = run_steps(run->steps(), options.progress,
                       [&](size_t i) { return run->step(i, *a.impl_->local.files, *b.impl_->local.files); });
  if (!ran) return public_error(ran.error());
  const amn::ModelDiff& d = run->result();
  DiffResult out{d.identical(), {}};
  for (const auto& t : d.tensors) out.tensors.push_back(public_diff(t));
  return out;
}

}  // namespace anamnesis
