#include "report/lethe.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/json.h"
#include "core/text.h"
#include "report/report.h"
#include "report/table.h"

namespace amn {
namespace {

struct Totals {
  LetheSums sums;
  uint64_t quantized = 0, kept = 0, bytes_before = 0, bytes_after = 0, elements = 0, q_before = 0, q_after = 0;
};

Totals totals(const ForgetPlan& plan) {
  Totals t;
  for (const auto& e : plan.entries) {
    const uint64_t after = forget_bytes_after(plan, e);
    t.bytes_before += e.bytes_before;
    t.bytes_after += after;
    if (e.encoder < 0) {
      ++t.kept;
      continue;
    }
    ++t.quantized;
    t.elements += e.elements;
    t.q_before += e.bytes_before;
    t.q_after += after;
    t.sums.add(plan.plan.encoders[static_cast<size_t>(e.encoder)]->distance());
  }
  return t;
}

double bits(uint64_t bytes, uint64_t elements) {
  return elements ? 8.0 * static_cast<double>(bytes) / static_cast<double>(elements) : 0;
}

void stats_json(JsonWriter& w, const LetheStats& s) {
  w.key("mae").value(s.mae).key("rmse").value(s.rmse).key("max_abs_error").value(s.max_abs_error);
  w.key("snr_db").value(s.snr_db).key("cosine").value(s.cosine).key("non_finite").value(s.non_finite);
}

std::string fixed(double v, int digits) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string sci(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

LetheStats lethe_stats(const LetheSums& s) {
  LetheStats o;
  o.count = s.count;
  o.non_finite = s.non_finite;
  if (s.count == 0) return o;
  const double n = static_cast<double>(s.count);
  o.mae = s.sum_abs / n;
  o.rmse = std::sqrt(s.sum_sq / n);
  o.max_abs_error = s.max_abs;
  // Signal over noise power; an exact copy has no noise (+inf, written as null in JSON).
  o.snr_db = s.sum_sq > 0 ? 10.0 * std::log10(s.sum_xx / s.sum_sq) : INFINITY;
  const double norms = std::sqrt(s.sum_xx) * std::sqrt(s.sum_yy);
  o.cosine = norms > 0 ? s.sum_xy / norms : (s.sum_xx == 0 && s.sum_yy == 0 ? 1.0 : 0.0);
  return o;
}

std::string lethe_json(const ForgetPlan& plan) {
  const Totals t = totals(plan);
  JsonWriter w;
  w.begin_object().key("scheme").value(plan.forgetter->describe());
  w.key("tensors").begin_array();
  for (const auto& e : plan.entries) {
    const uint64_t after = forget_bytes_after(plan, e);
    w.begin_object().key("name").value(e.name).key("shape").begin_array();
    for (uint64_t d : e.shape) w.value(d);
    w.end_array().key("dtype").value(dtype_name(e.dtype)).key("quantized").value(e.encoder >= 0);
    w.key("bytes_before").value(e.bytes_before).key("bytes_after").value(after);
    w.key("bits_before").value(bits(e.bytes_before, e.elements)).key("bits_after").value(bits(after, e.elements));
    if (e.encoder >= 0) stats_json(w, lethe_stats(plan.plan.encoders[static_cast<size_t>(e.encoder)]->distance()));
    else w.key("kept_because").value(e.kept_because);
    w.end_object();
  }
  w.end_array();
  w.key("model").begin_object().key("quantized").value(t.quantized).key("kept").value(t.kept);
  w.key("bytes_before").value(t.bytes_before).key("bytes_after").value(t.bytes_after);
  w.key("bytes_saved").value(t.bytes_before >= t.bytes_after ? t.bytes_before - t.bytes_after : 0);
  w.key("bits_before").value(bits(t.q_before, t.elements)).key("bits_after").value(bits(t.q_after, t.elements));
  stats_json(w, lethe_stats(t.sums));
  w.end_object();
  w.key("warnings").strings(plan.warnings);
  return w.end_object().take();
}

std::string render_lethe(const ForgetPlan& plan) {
  const Totals t = totals(plan);
  std::string out = "forgot " + std::to_string(t.quantized) + " of " + std::to_string(plan.entries.size()) +
                    " tensors as " + plan.forgetter->describe() + "\n";
  if (t.quantized > 0) {
    Table table({"tensor", "shape", "bits/w", "MAE", "RMSE", "max|e|", "SNR dB", "cosine"},
                {false, false, true, true, true, true, true, true});
    for (const auto& e : plan.entries) {
      if (e.encoder < 0) continue;
      const LetheStats s = lethe_stats(plan.plan.encoders[static_cast<size_t>(e.encoder)]->distance());
      table.add({e.name, dims_text(e.shape),
                 fixed(bits(e.bytes_before, e.elements), 2) + " -> " + fixed(bits(forget_bytes_after(plan, e), e.elements), 2),
                 sci(s.mae), sci(s.rmse), sci(s.max_abs_error), fixed(s.snr_db, 2), fixed(s.cosine, 6)});
    }
    out += table.render();
  }
  const LetheStats m = lethe_stats(t.sums);
  out += "model: " + human_bytes(t.bytes_before) + " -> " + human_bytes(t.bytes_after);
  if (t.quantized > 0) out += ", SNR " + fixed(m.snr_db, 2) + " dB, cosine " + fixed(m.cosine, 6);
  out += "\n";
  // Kept tensors by reason: a model has hundreds of norms, so names only when few.
  std::vector<std::pair<std::string, std::vector<std::string>>> kept;
  for (const auto& e : plan.entries) {
    if (e.encoder >= 0) continue;
    auto it = std::find_if(kept.begin(), kept.end(), [&](auto& k) { return k.first == e.kept_because; });
    if (it == kept.end()) it = kept.insert(kept.end(), {e.kept_because, {}});
    it->second.push_back(e.name);
  }
  for (const auto& [why, names] : kept) {
    out += "kept " + std::to_string(names.size()) + " as stored (" + why + ")";
    if (names.size() <= 4) {
      for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : ": ") + names[i];
    }
    out += "\n";
  }
  return out;
}

}  // namespace amn
