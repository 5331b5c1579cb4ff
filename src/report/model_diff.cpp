#include "report/model_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include "core/json.h"
#include "core/text.h"
#include "report/gguf_names.h"
#include "report/table.h"
#include "report/value_stats.h"
#include "report/report.h"
#include "report/values.h"

namespace amn {
namespace {

// Values are compared in batches decoded to doubles on the stack.
constexpr size_t kBatch = 1024;

// The plan's output type for one side: F32, except an F64 tensor, read as stored so that
// two F64 tensors differing below F32's precision are not called identical (whole
// numbers keep their dtype in every plan).
std::optional<DType> read_as(const Model& model, std::string_view name) {
  for (const auto& l : model.logical) {
    if (l.name == name) return DType::F32;
  }
  const TensorRecord* t = model.find(name);
  if (t && t->ggml_type == kNoGgmlType && t->dtype == DType::F64) return std::nullopt;
  return DType::F32;
}

std::vector<uint64_t> shape_of(const Model& model, std::string_view name) {
  for (const auto& l : model.logical) {
    if (l.name == name) return l.shape;
  }
  const TensorRecord* t = model.find(name);
  return t ? t->shape : std::vector<uint64_t>{};
}

// Bytes per unit the two sides are aligned by: one value, or one byte when the values
// are compared as bytes (a dtype the readers cannot describe, the same on both sides).
size_t unit_of(const Plan& plan, bool bytes) {
  return bytes ? 1 : dtype_info(plan.tensors.at(0).dtype).block_bytes;
}

// log10 from + - * / and frexp only, so the native amn and the WASM core print the same
// digits (their libm log10s differ in the last bit). x = m·2^e with m in [√½, √2);
// ln m = 2 atanh(z), z = (m-1)/(m+1), |z| < 0.172: 14 terms of the series reach well
// below a double's precision.
double portable_log10(double x) {
  int e = 0;
  double m = std::frexp(x, &e);  // m in [0.5, 1)
  if (m < 0.70710678118654752) {
    m *= 2;
    --e;
  }
  const double z = (m - 1) / (m + 1), z2 = z * z;
  double term = z, series = 0;
  for (int k = 0; k < 14; ++k) {
    series += term / (2 * k + 1);
    term *= z2;
  }
  constexpr double kLn2 = 0.69314718055994530942, kLn10 = 2.30258509299404568402;
  return (2 * series + e * kLn2) / kLn10;
}

bool bytes_mode(const TensorDiff& t) { return !t.skipped.empty(); }

void shape_json(JsonWriter& w, const char* key, const std::vector<uint64_t>& shape, bool present) {
  w.key(key);
  if (!present) {
    w.null();
    return;
  }
  w.begin_array();
  for (uint64_t d : shape) w.value(d);
  w.end_array();
}

}  // namespace

std::string_view diff_status_name(DiffStatus s) {
  switch (s) {
    case DiffStatus::identical: return "identical";
    case DiffStatus::same_values: return "same_values";
    case DiffStatus::different: return "different";
    case DiffStatus::shape_mismatch: return "shape_mismatch";
    case DiffStatus::only_in_a: return "only_in_a";
    case DiffStatus::only_in_b: return "only_in_b";
    case DiffStatus::not_compared: return "not_compared";
  }
  return "?";
}

bool TensorDiff::compared() const {
  return skipped.empty() && (status == DiffStatus::identical || status == DiffStatus::same_values ||
                             status == DiffStatus::different);
}

double TensorDiff::mae() const { return finite ? sum_abs / static_cast<double>(finite) : NAN; }
double TensorDiff::rmse() const { return finite ? std::sqrt(sum_sq_diff / static_cast<double>(finite)) : NAN; }

double TensorDiff::cosine() const {
  if (!finite) return NAN;
  if (sum_aa == 0 && sum_bb == 0) return 1.0;  // two zero vectors point the same way
  if (sum_aa == 0 || sum_bb == 0) return 0.0;  // a zero vector is orthogonal to the rest
  const double c = sum_ab / (std::sqrt(sum_aa) * std::sqrt(sum_bb));
  return std::clamp(c, -1.0, 1.0);  // rounding can step just past ±1
}

double TensorDiff::snr_db() const {
  if (!finite) return NAN;
  if (sum_sq_diff == 0) return INFINITY;  // nothing differs (even two zero vectors)
  if (sum_aa == 0) return -INFINITY;
  return 10.0 * portable_log10(sum_aa / sum_sq_diff);
}

bool ModelDiff::identical() const {
  return std::all_of(tensors.begin(), tensors.end(), [](const TensorDiff& t) { return t.status == DiffStatus::identical; });
}

namespace {

// Which of B's tensors each of A's is compared with: the same name, else (options.map_names,
// one side a GGUF of a known architecture and the other not a GGUF) the name llama.cpp's
// converter gave or took. Each B tensor is matched once; plain names first.
struct Matches {
  std::vector<size_t> partner;                     // per A name: its B index, or SIZE_MAX
  std::vector<std::optional<HfCounterpart>> via;   // per A name: matched through the names
  std::vector<bool> b_used;
  uint8_t gguf_side = 0;
  std::string arch;
};

Matches match_names(const Model& a, const std::vector<std::string>& names_a, const Model& b,
                    const std::vector<std::string>& names_b, const DiffOptions& options) {
  Matches m;
  m.partner.assign(names_a.size(), SIZE_MAX);
  m.via.resize(names_a.size());
  m.b_used.assign(names_b.size(), false);
  std::unordered_map<std::string_view, size_t> in_b;
  for (size_t j = 0; j < names_b.size(); ++j) in_b.emplace(names_b[j], j);
  for (size_t i = 0; i < names_a.size(); ++i) {
    const auto it = in_b.find(names_a[i]);
    if (it == in_b.end()) continue;
    m.partner[i] = it->second;
    m.b_used[it->second] = true;
  }
  if (!options.map_names) return m;
  const auto naming_a = gguf_naming(a), naming_b = gguf_naming(b);
  const bool a_gguf = naming_a && b.format != ModelFormat::gguf;
  const bool b_gguf = !a_gguf && naming_b && a.format != ModelFormat::gguf;
  if (!a_gguf && !b_gguf) return m;
  m.gguf_side = a_gguf ? 0 : 1;
  const GgufNaming& naming = a_gguf ? *naming_a : *naming_b;
  m.arch = naming.arch;
  // A GGUF B: its unmatched tensors by their Hugging Face names.
  std::unordered_map<std::string, std::pair<size_t, HfCounterpart>> b_by_hf;
  for (size_t j = 0; b_gguf && j < names_b.size(); ++j) {
    if (m.b_used[j]) continue;
    if (auto c = hf_counterpart(naming, names_b[j])) {
      std::string key = c->name;
      b_by_hf.emplace(std::move(key), std::pair{j, std::move(*c)});
    }
  }
  for (size_t i = 0; i < names_a.size(); ++i) {
    if (m.partner[i] != SIZE_MAX) continue;
    size_t j = 0;
    std::optional<HfCounterpart> c;
    if (a_gguf) {
      c = hf_counterpart(naming, names_a[i]);
      const auto it = c ? in_b.find(c->name) : in_b.end();
      if (it == in_b.end()) continue;
      j = it->second;
    } else {
      const auto it = b_by_hf.find(names_a[i]);
      if (it == b_by_hf.end()) continue;
      j = it->second.first;
      c = it->second.second;
    }
    if (m.b_used[j]) continue;
    m.partner[i] = j;
    m.b_used[j] = true;
    m.via[i] = std::move(c);
  }
  return m;
}

}  // namespace

Result<DiffRun> DiffRun::start(const Model& a, const Model& b, const DiffOptions& options) {
  DiffRun run;
  const auto names_a = stats_tensor_names(a);
  const auto names_b = stats_tensor_names(b);
  const Matches matches = match_names(a, names_a, b, names_b, options);

  auto add = [&run](std::string name, DiffStatus status) -> TensorDiff& {
    run.diff_.tensors.push_back({});
    TensorDiff& t = run.diff_.tensors.back();
    t.name = std::move(name);
    t.status = status;
    return t;
  };
  for (size_t i = 0; i < names_a.size(); ++i) {
    const std::string& name = names_a[i];
    if (matches.partner[i] == SIZE_MAX) {
      TensorDiff& t = add(name, DiffStatus::only_in_a);
      t.dtype_a = stored_type(a, name);
      t.shape_a = shape_of(a, name);
      continue;
    }
    const std::string& name_b = names_b[matches.partner[i]];
    const auto& via = matches.via[i];
    TensorDiff& t = add(name, DiffStatus::identical);
    if (via) {
      t.name_b = name_b;
      t.rows_permuted = via->rows_permuted;
      run.diff_.name_map = matches.arch;
    }
    t.dtype_a = stored_type(a, name);
    t.dtype_b = stored_type(b, name_b);
    t.shape_a = shape_of(a, name);
    t.shape_b = shape_of(b, name_b);
    if (t.shape_a != t.shape_b) {
      t.status = DiffStatus::shape_mismatch;
      continue;
    }
    Pair pair;
    pair.tensor = run.diff_.tensors.size() - 1;
    if (t.rows_permuted) {
      // LlamaModel.permute views each head's rows as two halves: rows must split so.
      const uint64_t rows = t.shape_a.empty() ? 0 : t.shape_a[0];
      if (via->heads == 0 || rows % (2ull * via->heads) != 0) {
        t.status = DiffStatus::not_compared;
        t.skipped = via->heads == 0 ? "the GGUF's head count is unknown: its q / k rows cannot be put back in order"
                                    : std::to_string(rows) + " rows do not split into " + std::to_string(via->heads) +
                                          " heads of two halves: the q / k rows cannot be put back in order";
        continue;
      }
      pair.heads = via->heads;
      pair.gguf_side = matches.gguf_side;
    }
    const Model* models[2] = {&a, &b};
    const std::string* names[2] = {&name, &name_b};
    bool planned = true;
    for (int s = 0; s < 2 && planned; ++s) {
      auto plan = plan_tensor(*models[s], *names[s], read_as(*models[s], *names[s]));
      if (!plan) {
        t.status = DiffStatus::not_compared;
        t.skipped = std::string(s ? "B: " : "A: ") + plan.error().message;
        planned = false;
      } else {
        pair.plans[s] = std::move(plan).value();
      }
    }
    if (!planned) continue;
    const DType da = pair.plans[0].tensors.at(0).dtype, db = pair.plans[1].tensors.at(0).dtype;
    if (!values::described(da) || !values::described(db)) {
      const DType odd = values::described(da) ? db : da;
      if (da != db || pair.heads) {  // bytes in another row order say nothing either
        t.status = DiffStatus::not_compared;
        t.skipped = std::string(dtype_name(odd)) + " values are not described";
        continue;
      }
      t.skipped = std::string(dtype_name(odd)) + " values are not described: bytes compared";
    }
    // The steps: always read the side that has produced less, so neither holds more than
    // its unmatched tail plus one piece.
    const bool bytes = bytes_mode(t);
    const uint32_t p = static_cast<uint32_t>(run.pairs_.size());
    size_t next[2] = {0, 0};
    uint64_t made[2] = {0, 0};
    const size_t first = run.steps_.size();
    while (next[0] < pair.plans[0].pieces.size() || next[1] < pair.plans[1].pieces.size()) {
      const bool a_left = next[0] < pair.plans[0].pieces.size();
      const int s = a_left && (made[0] <= made[1] || next[1] >= pair.plans[1].pieces.size()) ? 0 : 1;
      const Plan& plan = pair.plans[s];
      made[s] += plan.pieces[next[s]].out_length / unit_of(plan, bytes);
      run.steps_.push_back({p, static_cast<uint8_t>(s), static_cast<uint32_t>(next[s]++), false});
    }
    if (run.steps_.size() == first) {
      // Nothing to read (no elements): equal as far as values go.
      t.status = t.dtype_a == t.dtype_b && !t.rows_permuted ? DiffStatus::identical : DiffStatus::same_values;
      continue;
    }
    run.steps_.back().last = true;
    if (bytes) {
      t.elements = 1;
      for (uint64_t d : t.shape_a) t.elements *= d;
    }
    run.pairs_.push_back(std::move(pair));
  }
  for (size_t j = 0; j < names_b.size(); ++j) {
    if (matches.b_used[j]) continue;
    TensorDiff& t = add(names_b[j], DiffStatus::only_in_b);
    t.dtype_b = stored_type(b, names_b[j]);
    t.shape_b = shape_of(b, names_b[j]);
  }
  return run;
}

Status DiffRun::step(size_t i, FileSet& files_a, FileSet& files_b) {
  if (i >= steps_.size()) return make_error(ErrorCode::invalid_argument, "no such step");
  const Step& st = steps_[i];
  Pair& pair = pairs_[st.pair];
  if (current_pair_ != st.pair) {
    for (Side& s : sides_) {
      s.bytes.clear();
      s.bytes.shrink_to_fit();
      s.used = 0;
    }
    current_pair_ = st.pair;
  }
  Side& side = sides_[st.side];
  side.bytes.erase(side.bytes.begin(), side.bytes.begin() + static_cast<std::ptrdiff_t>(side.used));
  side.used = 0;
  const Plan& plan = pair.plans[st.side];
  const size_t had = side.bytes.size();
  const size_t length = plan.pieces[st.piece].out_length;
  side.bytes.resize(had + length);
  Status ran = run_piece(plan, st.piece, st.side ? files_b : files_a,
                         std::span<uint8_t>(side.bytes.data() + had, length), &side.cache);
  if (!ran) {
    side.bytes.resize(had);  // as before the step: it runs again once the bytes are there
    return ran;
  }
  compare_ready(pair);
  if (st.last) {
    finish(pair);
    for (Side& s : sides_) {
      s.bytes = {};
      s.used = 0;
      s.cache = {};
    }
  }
  return {};
}

namespace {

// Adds n value pairs (A's at pa, B's at pb; ua / ub bytes each) to t's counts and sums.
void compare_values(TensorDiff& t, DType da, const uint8_t* pa, size_t ua, DType db, const uint8_t* pb, size_t ub,
                    size_t n) {
  double va[kBatch], vb[kBatch];
  for (size_t at = 0; at < n; at += kBatch) {
    const size_t m = std::min(kBatch, n - at);
    size_t k = 0;
    (void)values::each_value(da, {pa + at * ua, m * ua}, [&](double v) { va[k++] = v; });
    k = 0;
    (void)values::each_value(db, {pb + at * ub, m * ub}, [&](double v) { vb[k++] = v; });
    for (k = 0; k < m; ++k) {
      const double x = va[k], y = vb[k];
      ++t.elements;
      if (da == db && std::memcmp(pa + (at + k) * ua, pb + (at + k) * ub, ua) == 0) ++t.bit_equal;
      const bool both_nan = std::isnan(x) && std::isnan(y);
      if (x == y || both_nan) ++t.equal;
      if (!std::isfinite(x) || !std::isfinite(y)) {
        ++t.nonfinite;
        if (!(x == y || both_nan)) ++t.nonfinite_mismatch;
        continue;
      }
      const double d = x - y, ad = std::fabs(d);
      ++t.finite;
      t.max_abs = std::max(t.max_abs, ad);
      t.sum_abs += ad;
      t.sum_sq_diff += d * d;
      t.sum_aa += x * x;
      t.sum_bb += y * y;
      t.sum_ab += x * y;
    }
  }
}

}  // namespace

// Compares every unit both sides have read and not yet compared; with permuted rows, every
// whole head both sides have read (LlamaModel.permute moves rows only within a head, so a
// side holds at most a head's rows plus one piece: the tensor is never held whole).
void DiffRun::compare_ready(Pair& pair) {
  TensorDiff& t = diff_.tensors[pair.tensor];
  Side& a = sides_[0];
  Side& b = sides_[1];
  const bool bytes = bytes_mode(t);
  const size_t ua = unit_of(pair.plans[0], bytes), ub = unit_of(pair.plans[1], bytes);
  size_t n = std::min((a.bytes.size() - a.used) / ua, (b.bytes.size() - b.used) / ub);
  uint64_t row = 1, head_rows = 0;
  if (pair.heads) {
    for (size_t d = 1; d < t.shape_a.size(); ++d) row *= t.shape_a[d];
    head_rows = t.shape_a[0] / pair.heads;
    n -= n % (head_rows * row);  // whole heads only
  }
  if (n == 0) return;  // the other side has read nothing yet (and memcmp takes no null pointer)
  const uint8_t* pa = a.bytes.data() + a.used;
  const uint8_t* pb = b.bytes.data() + b.used;
  a.used += n * ua;
  b.used += n * ub;
  if (bytes) {  // same dtype on both sides: the bytes alone say equal or not
    if (std::memcmp(pa, pb, n) != 0) t.status = DiffStatus::different;
    return;
  }
  const DType da = pair.plans[0].tensors[0].dtype, db = pair.plans[1].tensors[0].dtype;
  if (!pair.heads) {
    compare_values(t, da, pa, ua, db, pb, ub, n);
    return;
  }
  // A's rows in order, each against the B row the permutation put it in (or took it from).
  const bool to_gguf = pair.gguf_side == 1;
  for (uint64_t head = 0; head < n / (head_rows * row); ++head) {
    const uint64_t base = head * head_rows;
    for (uint64_t r = 0; r < head_rows; ++r) {
      const uint64_t rb = permuted_row(r, head_rows, to_gguf);
      compare_values(t, da, pa + (base + r) * row * ua, ua, db, pb + (base + rb) * row * ub, ub, row);
    }
  }
}

void DiffRun::finish(Pair& pair) {
  TensorDiff& t = diff_.tensors[pair.tensor];
  if (bytes_mode(t)) return;  // `different` already set by a differing byte, if any
  const bool same_layout = t.dtype_a == t.dtype_b && !t.rows_permuted;
  if (same_layout && t.bit_equal == t.elements) t.status = DiffStatus::identical;
  else if (t.equal == t.elements) t.status = DiffStatus::same_values;
  else t.status = DiffStatus::different;
}

Result<ModelDiff> model_diff(const Model& a, FileSet& files_a, const Model& b, FileSet& files_b,
                             const DiffOptions& options) {
  AMN_ASSIGN(auto run, DiffRun::start(a, b, options));
  for (size_t i = 0; i < run.steps(); ++i) AMN_TRY(run.step(i, files_a, files_b));
  return run.result();
}

std::string diff_json(const ModelDiff& diff) {
  JsonWriter w;
  w.begin_object().key("identical").value(diff.identical()).key("tensors").begin_array();
  for (const auto& t : diff.tensors) {
    const bool has_a = t.status != DiffStatus::only_in_b, has_b = t.status != DiffStatus::only_in_a;
    w.begin_object().key("name").value(t.name);
    if (!t.name_b.empty()) w.key("name_b").value(t.name_b);
    if (t.rows_permuted) w.key("rows_permuted").value(true);
    w.key("status").value(diff_status_name(t.status));
    w.key("dtype_a");
    has_a ? void(w.value(t.dtype_a)) : void(w.null());
    w.key("dtype_b");
    has_b ? void(w.value(t.dtype_b)) : void(w.null());
    shape_json(w, "shape_a", t.shape_a, has_a);
    shape_json(w, "shape_b", t.shape_b, has_b);
    const bool values = t.compared();
    const double none = NAN;  // written as null
    auto count = [&w, values](const char* key, uint64_t n) { values ? void(w.key(key).value(n)) : void(w.key(key).null()); };
    w.key("elements").value(t.elements);
    count("equal", t.equal);
    w.key("max_abs_diff").value(values && t.finite ? t.max_abs : none);
    w.key("mae").value(values ? t.mae() : none);
    w.key("rmse").value(values ? t.rmse() : none);
    w.key("cosine").value(values ? t.cosine() : none);
    w.key("snr_db").value(values ? t.snr_db() : none);
    count("nonfinite", t.nonfinite);
    count("nonfinite_mismatch", t.nonfinite_mismatch);
    if (!t.skipped.empty()) w.key("skipped").value(t.skipped);
    w.end_object();
  }
  w.end_array();
  if (!diff.name_map.empty()) w.key("name_map").value(diff.name_map);
  return w.end_object().take();
}

std::string render_diff(const ModelDiff& diff) {
  Table table({"tensor", "status", "A", "B", "max |Δ|", "MAE", "RMSE", "cosine", "SNR dB"},
              {false, false, false, false, true, true, true, true, true});
  size_t count[7] = {};
  for (const auto& t : diff.tensors) {
    ++count[static_cast<size_t>(t.status)];
    const bool mismatch = t.status == DiffStatus::shape_mismatch;
    auto side = [mismatch](const std::string& dtype, const std::vector<uint64_t>& shape, bool present) {
      if (!present) return std::string("-");
      return mismatch ? dtype + " " + dims_text(shape) : dtype;
    };
    std::vector<std::string> row = {t.name_b.empty() ? t.name : t.name + " = " + t.name_b, std::string(diff_status_name(t.status)),
                                    side(t.dtype_a, t.shape_a, t.status != DiffStatus::only_in_b),
                                    side(t.dtype_b, t.shape_b, t.status != DiffStatus::only_in_a)};
    if (t.compared()) {
      for (const auto& cell : {table_number(t.finite ? t.max_abs : NAN), table_number(t.mae()), table_number(t.rmse()),
                               table_number(t.cosine(), "%.8f"), table_number(t.snr_db(), "%.2f")})
        row.push_back(cell);
    } else {
      for (int c = 0; c < 5; ++c) row.push_back("-");
    }
    table.add(std::move(row));
  }
  std::string out = table.render();
  out += std::to_string(diff.tensors.size()) + " tensors:";
  const char* sep = " ";
  for (size_t s = 0; s < 7; ++s) {
    if (!count[s]) continue;
    out += sep + std::to_string(count[s]) + " " + std::string(diff_status_name(static_cast<DiffStatus>(s)));
    sep = ", ";
  }
  out += "\n";
  if (!diff.name_map.empty()) {
    const auto mapped = std::count_if(diff.tensors.begin(), diff.tensors.end(), [](const TensorDiff& t) { return !t.name_b.empty(); });
    const bool permuted = std::any_of(diff.tensors.begin(), diff.tensors.end(), [](const TensorDiff& t) { return t.rows_permuted; });
    out += std::to_string(mapped) + " matched through llama.cpp's " + diff.name_map + " GGUF <-> Hugging Face names" +
           (permuted ? " (q / k rows compared in one order)" : "") + "\n";
  }
  out += diff.identical() ? "the models are identical\n" : "the models differ\n";
  return out;
}

int diff_exit_status(const ModelDiff& diff) { return diff.identical() ? 0 : 3; }

}  // namespace amn
