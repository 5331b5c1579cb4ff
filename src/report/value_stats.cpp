#include "report/value_stats.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/json.h"
#include "core/text.h"
#include "report/report.h"
#include "report/values.h"

namespace amn {
namespace {

using values::described;
using values::each_value;

size_t bin_of(double v, double lo, double hi) {
  if (!(hi > lo)) return 0;
  const double at = (v - lo) / (hi - lo) * static_cast<double>(kStatsBins);
  const size_t b = at <= 0 ? 0 : static_cast<size_t>(at);
  return b >= kStatsBins ? kStatsBins - 1 : b;  // the maximum falls in the last bin
}

void object(JsonWriter& w, const ValueStats& s) {
  w.begin_object().key("name").value(s.name).key("dtype").value(s.dtype).key("shape").begin_array();
  for (uint64_t d : s.shape) w.value(d);
  w.end_array().key("count").value(s.count);
  const bool any = s.finite > 0;  // no finite value: no range, mean or std (null)
  w.key("min").value(any ? s.min : NAN).key("max").value(any ? s.max : NAN);
  w.key("mean").value(s.mean()).key("std").value(s.std());
  w.key("nan").value(s.nan).key("pos_inf").value(s.pos_inf).key("neg_inf").value(s.neg_inf).key("zeros").value(s.zeros);
  w.key("histogram").begin_object().key("min").value(any ? s.min : NAN).key("max").value(any ? s.max : NAN);
  w.key("counts").begin_array();
  for (uint64_t c : s.histogram) w.value(c);
  w.end_array().end_object();
  if (!s.skipped.empty()) w.key("skipped").value(s.skipped);
  w.end_object();
}

}  // namespace

double ValueStats::mean() const { return finite ? sum / static_cast<double>(finite) : NAN; }

double ValueStats::std() const {
  if (!finite) return NAN;
  const double m = mean();
  const double var = sum_sq / static_cast<double>(finite) - m * m;
  return var > 0 ? std::sqrt(var) : 0.0;  // rounding can make a constant tensor's slightly negative
}

Result<StatsRun> StatsRun::start(const Model& model, std::string_view name) {
  StatsRun run;
  AMN_ASSIGN(run.plan_, plan_tensor(model, name, DType::F32));
  ValueStats& s = run.stats_;
  s.name = std::string(name);
  s.shape = run.plan_.tensors.at(0).shape;
  s.dtype = stored_type(model, name);
  s.histogram.assign(kStatsBins, 0);
  const DType out = run.plan_.tensors.at(0).dtype;
  if (!described(out)) s.skipped = std::string(dtype_name(out)) + " values are not described";
  return run;
}

Status StatsRun::step(size_t i, FileSet& files, SchemeInputCache* cache) {
  const size_t n = plan_.pieces.size();
  if (i >= 2 * n) return make_error(ErrorCode::invalid_argument, "no such step");
  const size_t piece = i % n;
  buffer_.resize(plan_.pieces[piece].out_length);
  AMN_TRY(run_piece(plan_, piece, files, buffer_, cache));
  const DType dtype = plan_.tensors.at(0).dtype;
  ValueStats& s = stats_;
  if (i < n) {  // first pass: counts, range, moments
    return each_value(dtype, buffer_, [&s](double v) {
      ++s.count;
      if (std::isnan(v)) return void(++s.nan);
      if (std::isinf(v)) return void(v > 0 ? ++s.pos_inf : ++s.neg_inf);
      if (v == 0) ++s.zeros;
      if (s.finite == 0 || v < s.min) s.min = v;
      if (s.finite == 0 || v > s.max) s.max = v;
      ++s.finite;
      s.sum += v;
      s.sum_sq += v * v;
    });
  }
  return each_value(dtype, buffer_, [&s](double v) {  // second pass: the histogram
    if (std::isfinite(v)) ++s.histogram[bin_of(v, s.min, s.max)];
  });
}

std::string stored_type(const Model& model, std::string_view name) {
  std::string type;
  for (const auto& t : model.tensors) {
    if (t.name == name) type = std::string(stored_type_name(t));
  }
  for (const auto& l : model.logical) {
    if (l.name == name) type = l.scheme;  // a logical name hides a stored one (plan_tensor's choice)
  }
  return type;
}

std::vector<std::string> stats_tensor_names(const Model& model) {
  std::vector<std::string> names;
  std::vector<bool> listed(model.logical.size(), false);
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    const int32_t of = model.part_of.empty() ? -1 : model.part_of[i];
    if (of < 0) {
      names.push_back(model.tensors[i].name);
    } else if (!listed[static_cast<size_t>(of)]) {
      listed[static_cast<size_t>(of)] = true;
      names.push_back(model.logical[static_cast<size_t>(of)].name);
    }
  }
  return names;
}

Result<ValueStats> tensor_stats(const Model& model, FileSet& files, std::string_view name) {
  AMN_ASSIGN(auto run, StatsRun::start(model, name));
  SchemeInputCache cache;
  for (size_t i = 0; i < run.steps(); ++i) AMN_TRY(run.step(i, files, &cache));
  return run.stats();
}

std::string stats_json(std::span<const ValueStats> tensors) {
  JsonWriter w;
  w.begin_object().key("tensors").begin_array();
  for (const auto& s : tensors) object(w, s);
  return w.end_array().end_object().take();
}

std::string stats_json_one(const ValueStats& s) {
  JsonWriter w;
  object(w, s);
  return w.take();
}

std::string render_stats(const ValueStats& s) {
  std::string out = s.name + "  " + s.dtype + " " + dims_text(s.shape);
  if (!s.skipped.empty()) return out + "  (" + s.skipped + ")\n";
  out += "  " + std::to_string(s.count) + " values\n";
  out += "  min " + table_number(s.finite ? s.min : NAN) + "  max " + table_number(s.finite ? s.max : NAN) +
         "  mean " + table_number(s.mean()) + "  std " + table_number(s.std()) + "\n";
  out += "  zeros " + std::to_string(s.zeros) + "  nan " + std::to_string(s.nan) + "  +inf " + std::to_string(s.pos_inf) +
         "  -inf " + std::to_string(s.neg_inf) + "\n";
  if (!s.finite) return out;
  uint64_t top = 0;
  for (uint64_t c : s.histogram) top = c > top ? c : top;
  constexpr int kWidth = 40;
  const double width = (s.max - s.min) / static_cast<double>(kStatsBins);
  for (size_t b = 0; b < kStatsBins; ++b) {
    char label[48];
    std::snprintf(label, sizeof label, "  %12.5g ", s.min + width * static_cast<double>(b));
    out += label;
    // One '#' per 1/kWidth of the fullest bin; a non-empty bin shows at least one.
    const uint64_t c = s.histogram[b];
    int bar = top ? static_cast<int>(static_cast<double>(c) * kWidth / static_cast<double>(top) + 0.5) : 0;
    if (c > 0 && bar == 0) bar = 1;
    out += std::string(static_cast<size_t>(bar), '#') + std::string(static_cast<size_t>(kWidth - bar), ' ');
    out += " " + std::to_string(c) + "\n";
    if (!(s.max > s.min)) break;  // one value: one bin
  }
  return out;
}

}  // namespace amn
