#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/text.h"
#include "report/report.h"
#include "report/table.h"

namespace amn {
namespace {

std::string short_count(uint64_t n) {
  const char* units[] = {"", "K", "M", "B", "T"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
  else std::snprintf(buf, sizeof buf, "%.2f%s", v, units[u]);
  return buf;
}

}  // namespace

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (n < 1024) return std::to_string(n) + " B";
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string table_number(double v, const char* fmt) {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string render_inspect(const Model& model) {
  std::string out;
  uint64_t file_bytes = 0;
  for (const auto& f : model.files) file_bytes += f.size;
  Table summary({"format", std::string(model_format_name(model.format)) + (model.sharded ? " (sharded)" : "")}, {false, false});
  summary.add({"files", std::to_string(model.files.size()) + " (" + human_bytes(file_bytes) + ")"});
  if (!model.index_name.empty()) summary.add({"index", model.index_name});
  summary.add({"tensors", grouped(model.tensors.size())});
  summary.add({"parameters", short_count(model.parameter_count()) + " (" + grouped(model.parameter_count()) + ")"});
  summary.add({"tensor data", human_bytes(model.tensor_bytes())});
  summary.add({"remembered", "bf16 " + human_bytes(dequantized_bytes(model, DType::BF16)) + ", f16 " +
                                 human_bytes(dequantized_bytes(model, DType::F16)) + ", f32 " +
                                 human_bytes(dequantized_bytes(model, DType::F32))});
  for (const auto& [k, v] : model.metadata) summary.add({"metadata", k + " = " + v});
  summary.add({"config.json", model.config_json.empty() ? "absent" : "present"});
  if (!model.quant_config_file.empty()) summary.add({"quantizer config", model.quant_config_file});
  if (model.parameter_count() > 0) {
    char bpw[32];
    std::snprintf(bpw, sizeof bpw, "%.2f", 8.0 * static_cast<double>(model.tensor_bytes()) /
                                               static_cast<double>(model.parameter_count()));
    summary.add({"bits/weight", bpw});
  }
  out += summary.render();
  if (const auto lines = details_text_of(model); !lines.empty()) {
    out += "\n";
    Table details({"key", "value"}, {false, false});
    for (const auto& [k, v] : lines) details.add({k, v});
    out += details.render();
  }
  for (const auto& w : model.warnings) out += "warning: " + w + "\n";

  out += "\n";
  Table dtypes({"dtype", "tensors", "parameters", "size"}, {false, true, true, true});
  for (const auto& r : dtype_histogram(model)) {
    dtypes.add({r.type, grouped(r.tensors), grouped(r.parameters), human_bytes(r.bytes)});
  }
  out += dtypes.render();

  if (!model.logical.empty()) {
    // What quantization took: per scheme, how many weights, their stored and remembered sizes.
    out += "\n";
    Table schemes({"scheme", "weights", "parameters", "stored", "bits/weight", "as bf16"}, {false, true, true, true, true, true});
    std::vector<std::string> order;
    for (const auto& l : model.logical) {
      if (std::find(order.begin(), order.end(), l.scheme) == order.end()) order.push_back(l.scheme);
    }
    for (const auto& s : order) {
      uint64_t count = 0, params = 0, stored = 0;
      for (const auto& l : model.logical) {
        if (l.scheme != s) continue;
        ++count;
        params += l.elements;
        stored += l.stored_bytes;
      }
      char bpw[32];
      std::snprintf(bpw, sizeof bpw, "%.2f", params ? 8.0 * static_cast<double>(stored) / static_cast<double>(params) : 0.0);
      schemes.add({s, grouped(count), grouped(params), human_bytes(stored), bpw, human_bytes(params * 2)});
    }
    out += schemes.render();
    for (const auto& l : model.logical) {
      if (!l.error.empty()) out += "error: " + l.name + " (" + l.scheme + "): " + l.error + "\n";
    }
  }

  out += "\n";
  // Quantized weights appear once, as what they encode, where their first part is stored.
  Table tensors({"name", "dtype", "shape", "parameters", "size"}, {false, false, false, true, true});
  std::vector<bool> shown(model.logical.size(), false);
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    const auto& t = model.tensors[i];
    if (model.is_part(i)) {
      const auto li = static_cast<size_t>(model.part_of[i]);
      if (shown[li]) continue;
      shown[li] = true;
      const auto& l = model.logical[li];
      char bpw[32];
      std::snprintf(bpw, sizeof bpw, "%.2f", l.bits_per_weight());
      tensors.add({l.name, l.scheme + " (" + l.variant + ", " + bpw + " bits/weight)", dims_text(l.shape),
                   grouped(l.elements), human_bytes(l.stored_bytes)});
      continue;
    }
    if (model.is_consumed(i)) continue;
    tensors.add({t.name, std::string(stored_type_name(t)), dims_text(t.shape), grouped(t.elements),
                 t.size_known ? human_bytes(t.nbytes) : std::string("?")});
  }
  out += tensors.render();
  return out;
}

std::string render_parse(const Model& model) {
  std::string out;
  Table files({"file", "name", "bytes", "header"}, {true, false, true, true});
  for (size_t i = 0; i < model.files.size(); ++i) {
    const auto& f = model.files[i];
    files.add({std::to_string(i), f.name, std::to_string(f.size), std::to_string(f.header_bytes)});
  }
  out += files.render();
  out += "\n";
  if (model.logical.empty()) {
    Table records({"name", "dtype", "shape", "file", "offset", "end", "bytes"},
                  {false, false, false, true, true, true, true});
    for (const auto& t : model.tensors) {
      records.add({t.name, std::string(stored_type_name(t)), dims_text(t.shape), std::to_string(t.file),
                   std::to_string(t.offset), std::to_string(t.offset + t.nbytes), std::to_string(t.nbytes)});
    }
    out += records.render();
    return out;
  }
  // A quantized model: records grouped by the weight they are a part of, with their role.
  Table records({"name", "role", "dtype", "shape", "file", "offset", "end", "bytes"},
                {false, false, false, false, true, true, true, true});
  auto add = [&](const TensorRecord& t, std::string role) {
    records.add({t.name, std::move(role), std::string(stored_type_name(t)), dims_text(t.shape), std::to_string(t.file),
                 std::to_string(t.offset), std::to_string(t.offset + t.nbytes), std::to_string(t.nbytes)});
  };
  std::vector<bool> shown(model.logical.size(), false);
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    if (model.is_part(i)) {
      const auto li = static_cast<size_t>(model.part_of[i]);
      if (shown[li]) continue;
      shown[li] = true;
      const auto& l = model.logical[li];
      for (const auto& [role, r] : l.parts) add(model.tensors[r], l.scheme + " " + role + " of " + l.name);
      continue;
    }
    add(model.tensors[i], model.is_consumed(i) ? "activation scale (consumed)" : "tensor");
  }
  out += records.render();
  return out;
}

}  // namespace amn
