#include "report/value_stats.h"

#include <algorithm>
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

size_t bin_of(double v, double lo, double hi, size_t bins) {
  if (!(hi > lo)) return 0;
  const double at = (v - lo) / (hi - lo) * static_cast<double>(bins);
  const size_t b = at <= 0 ? 0 : static_cast<size_t>(at);
  return b >= bins ? bins - 1 : b;  // the maximum falls in the last bin
}

// The first row (or column) of cell k when n rows are drawn as `cells` cells: rows r with
// floor(r * cells / n) == k start at ceil(k * n / cells).
uint64_t cell_start(uint64_t k, uint64_t n, uint64_t cells) { return (k * n + cells - 1) / cells; }

// The exact extremes of 64-bit integers (doubles would round them above 2^53).
template <class T>
void extremes(std::span<const uint8_t> bytes, bool first, T& lo, T& hi) {
  const size_t n = bytes.size() / sizeof(T);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof v);
    if (first && i == 0) lo = hi = v;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
}

// The plan's copy, cast and GGUF block pieces split into pieces of at most kStatsPieceBytes
// of output, on whole elements (copy: whole bytes of whole elements, as kStatsPieceBytes is
// a multiple of every element size) or whole blocks.
std::vector<Piece> smaller_pieces(const std::vector<Piece>& pieces) {
  std::vector<Piece> out;
  for (const Piece& p : pieces) {
    uint64_t unit_in = 0, unit_out = 0, unit_count = 0;  // one element (or block) in and out
    if (p.kind == PieceKind::copy) {
      unit_in = unit_out = unit_count = 1;  // count is bytes
    } else if (p.kind == PieceKind::cast) {
      unit_in = dtype_info(p.from).block_bytes;
      unit_out = dtype_info(p.to).block_bytes;
      unit_count = 1;
    } else if (p.kind == PieceKind::dequantize_ggml && p.blocks > 0 && p.count % p.blocks == 0) {
      unit_in = p.in_length / p.blocks;
      unit_count = p.count / p.blocks;
      unit_out = p.out_length / p.blocks;
    }
    const uint64_t units = unit_out ? p.out_length / unit_out : 0;
    if (unit_out == 0 || p.out_length <= kStatsPieceBytes || units * unit_out != p.out_length) {
      out.push_back(p);
      continue;
    }
    const uint64_t per = std::max<uint64_t>(1, kStatsPieceBytes / unit_out);
    for (uint64_t done = 0; done < units; done += per) {
      const uint64_t n = std::min(per, units - done);
      Piece q = p;
      q.in_offset = p.in_offset + done * unit_in;
      q.in_length = n * unit_in;
      q.out_length = n * unit_out;
      q.count = n * unit_count;
      if (p.kind == PieceKind::dequantize_ggml) q.blocks = n;
      q.shape.clear();  // a piece's output shape is not read for these kinds
      out.push_back(std::move(q));
    }
  }
  return out;
}

// A float value of the head: a number, or "nan" / "inf" / "-inf" (JSON has none of them).
void head_value(JsonWriter& w, double v) {
  if (std::isnan(v)) w.value("nan");
  else if (std::isinf(v)) w.value(v > 0 ? "inf" : "-inf");
  else w.value(v);
}

// The page's detail fields (value_stats.h: ValueStats, docs/json-schema.md "stats").
void detail_fields(JsonWriter& w, const ValueStats& s) {
  w.key("values_dtype").value(dtype_name(s.values_dtype)).key("head").begin_array();
  if (!s.skipped.empty()) {
    for (uint8_t b : s.head) w.value(static_cast<uint64_t>(b));
    w.end_array().key("bytes").value(s.stored_bytes);
    return;
  }
  if (s.values_dtype == DType::I64 || s.values_dtype == DType::U64) {  // exact, as decimal strings
    const bool is_signed = s.values_dtype == DType::I64;
    for (size_t at = 0; at + 8 <= s.head.size(); at += 8) {
      uint64_t u;
      std::memcpy(&u, s.head.data() + at, 8);
      w.value(is_signed ? std::to_string(static_cast<int64_t>(u)) : std::to_string(u));
    }
    w.end_array();
    if (s.finite) {
      w.key("int_min").value(is_signed ? std::to_string(s.int_min) : std::to_string(s.uint_min));
      w.key("int_max").value(is_signed ? std::to_string(s.int_max) : std::to_string(s.uint_max));
    }
  } else {
    (void)each_value(s.values_dtype, s.head, [&w](double v) { head_value(w, v); });
    w.end_array();
  }
  const Heatmap& h = s.heatmap;
  w.key("heatmap");
  if (h.cell_rows == 0) {
    w.null();
    return;
  }
  w.begin_object().key("rows").value(h.rows).key("cols").value(h.cols);
  w.key("cell_rows").value(h.cell_rows).key("cell_cols").value(h.cell_cols);
  // Cell means at float precision (a picture needs no more): one %.9g each, not the
  // shortest-digits search, which would cost 65,536 × 2 × up to 17 formats.
  for (const bool absolute : {true, false}) {
    w.key(absolute ? "abs" : "signed").begin_array();
    for (size_t k = 0; k < h.count.size(); ++k) {
      if (h.count[k] == 0) {
        w.null();
        continue;
      }
      const double sum = absolute ? h.sum_abs[k] : h.sum[k];
      char text[32];
      std::snprintf(text, sizeof text, "%.9g", static_cast<double>(static_cast<float>(sum / static_cast<double>(h.count[k]))));
      w.raw(text);
    }
    w.end_array();
  }
  w.end_object();
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
  if (s.detail == StatsDetail::page) detail_fields(w, s);
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

Result<StatsRun> StatsRun::start(const Model& model, std::string_view name, StatsDetail detail) {
  StatsRun run;
  AMN_ASSIGN(run.plan_, plan_tensor(model, name, DType::F32));
  run.plan_.pieces = smaller_pieces(run.plan_.pieces);
  ValueStats& s = run.stats_;
  s.name = std::string(name);
  s.shape = run.plan_.tensors.at(0).shape;
  s.dtype = stored_type(model, name);
  s.detail = detail;
  s.histogram.assign(detail == StatsDetail::page ? kDetailBins : kStatsBins, 0);
  const DType out = run.plan_.tensors.at(0).dtype;
  s.values_dtype = out;
  s.stored_bytes = run.plan_.data_bytes;
  if (!described(out)) s.skipped = std::string(dtype_name(out)) + " values are not described";
  if (detail == StatsDetail::page && s.skipped.empty() && s.shape.size() >= 2) {
    Heatmap& h = s.heatmap;
    h.rows = s.shape[0];
    h.cols = 1;
    for (size_t d = 1; d < s.shape.size(); ++d) h.cols *= s.shape[d];
    if (h.rows > 0 && h.cols > 0) {
      h.cell_rows = std::min(h.rows, kHeatmapCells);
      h.cell_cols = std::min(h.cols, kHeatmapCells);
      const size_t cells = static_cast<size_t>(h.cell_rows * h.cell_cols);
      h.sum.assign(cells, 0);
      h.sum_abs.assign(cells, 0);
      h.count.assign(cells, 0);
      run.next_row_ = cell_start(1, h.rows, h.cell_rows);
      run.next_col_ = cell_start(1, h.cols, h.cell_cols);
    }
  }
  return run;
}

size_t StatsRun::steps() const {
  if (stats_.skipped.empty()) return 2 * plan_.pieces.size();
  // A tensor the core does not describe: the page still lists its first stored bytes.
  return stats_.detail == StatsDetail::page && !plan_.pieces.empty() ? 1 : 0;
}

// The page's additions to the first pass over one piece: the head, the exact 64-bit
// extremes and the heatmap cells (the pieces arrive in row-major order).
void StatsRun::first_pass_detail(DType dtype) {
  ValueStats& s = stats_;
  const size_t width = dtype_info(dtype).block_bytes;
  const size_t want = kDetailHead * width;
  if (s.head.size() < want) {
    const size_t take = std::min(want - s.head.size(), buffer_.size());
    s.head.insert(s.head.end(), buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(take));
  }
  if (dtype == DType::I64) extremes<int64_t>(buffer_, seen_ == 0, s.int_min, s.int_max);
  if (dtype == DType::U64) extremes<uint64_t>(buffer_, seen_ == 0, s.uint_min, s.uint_max);
  seen_ += buffer_.size() / width;
  Heatmap& h = s.heatmap;
  if (h.cell_rows == 0) return;
  (void)each_value(dtype, buffer_, [&](double v) {
    if (std::isfinite(v)) {
      const size_t k = static_cast<size_t>(cell_row_ * h.cell_cols + cell_col_);
      h.sum[k] += v;
      h.sum_abs[k] += std::fabs(v);
      ++h.count[k];
    }
    if (++col_ == h.cols) {  // the next row
      col_ = 0;
      cell_col_ = 0;
      next_col_ = cell_start(1, h.cols, h.cell_cols);
      if (++row_ == next_row_) next_row_ = cell_start(++cell_row_ + 1, h.rows, h.cell_rows);
    } else if (col_ == next_col_) {
      next_col_ = cell_start(++cell_col_ + 1, h.cols, h.cell_cols);
    }
  });
}

Status StatsRun::step(size_t i, FileSet& files, SchemeInputCache* cache) {
  const size_t n = plan_.pieces.size();
  if (i >= steps()) return make_error(ErrorCode::invalid_argument, "no such step");
  const size_t piece = i % n;
  buffer_.resize(plan_.pieces[piece].out_length);
  AMN_TRY(run_piece(plan_, piece, files, buffer_, cache));
  const DType dtype = plan_.tensors.at(0).dtype;
  ValueStats& s = stats_;
  if (!s.skipped.empty()) {  // the page's one step: the first stored bytes
    s.head.assign(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(std::min(buffer_.size(), kDetailHead)));
    return {};
  }
  if (i < n) {  // first pass: counts, range, moments
    AMN_TRY(each_value(dtype, buffer_, [&s](double v) {
      ++s.count;
      if (std::isnan(v)) return void(++s.nan);
      if (std::isinf(v)) return void(v > 0 ? ++s.pos_inf : ++s.neg_inf);
      if (v == 0) ++s.zeros;
      if (s.finite == 0 || v < s.min) s.min = v;
      if (s.finite == 0 || v > s.max) s.max = v;
      ++s.finite;
      s.sum += v;
      s.sum_sq += v * v;
    }));
    if (s.detail == StatsDetail::page) first_pass_detail(dtype);
    return {};
  }
  const size_t bins = s.histogram.size();
  return each_value(dtype, buffer_, [&s, bins](double v) {  // second pass: the histogram
    if (std::isfinite(v)) ++s.histogram[bin_of(v, s.min, s.max, bins)];
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
  const size_t bins = s.histogram.size();
  const double width = (s.max - s.min) / static_cast<double>(bins);
  for (size_t b = 0; b < bins; ++b) {
    char label[48];
    std::snprintf(label, sizeof label, "  %12.5g ", s.min + width * static_cast<double>(b));
    out += label;
    // One '#' per 1/kWidth of the fullest bin; a non-empty bin shows at least one.
    const uint64_t c = s.histogram[b];
    int bar = top ? static_cast<int>(static_cast<double>(c) * kWidth / static_cast<double>(top) + 0.5) : 0;
    if (c > 0 && bar == 0) bar = 1;
    out += std::string(static_cast<size_t>(bar), '#') + std::string(static_cast<size_t>(kWidth - bar), ' ');
    out += ' ';
    out += std::to_string(c);
    out += '\n';
    if (!(s.max > s.min)) break;  // one value: one bin
  }
  return out;
}

}  // namespace amn
