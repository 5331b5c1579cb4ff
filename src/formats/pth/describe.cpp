#include "formats/pth/describe.h"

#include "core/json.h"

namespace amn::pth {
namespace {

// Values shown to people per line before the rest are counted.
constexpr size_t kTextValues = 40;
constexpr size_t kTextValueChars = 120;

}  // namespace

std::string details_json(const Facts& f) {
  std::string o = "{\"container\": ";
  append_json_string(o, f.legacy ? "legacy" : "zip");
  if (!f.legacy) {
    o += ", \"prefix\": ";
    append_json_string(o, f.prefix);
  }
  o += ", \"version\": ";
  append_json_string(o, f.version);
  o += ", \"byteorder\": ";
  append_json_string(o, f.byteorder);
  o += ", \"pickle_protocol\": " + std::to_string(f.pickle_protocol);
  if (f.legacy && !f.sys_info_json.empty()) o += ", \"sys_info\": " + f.sys_info_json;
  o += ", \"storages\": " + std::to_string(f.storages);
  o += ", \"globals\": [";
  for (size_t i = 0; i < f.globals.size(); ++i) {
    const auto& g = f.globals[i];
    o += i ? ", {\"name\": " : "{\"name\": ";
    append_json_string(o, pickle::global_name(g));
    o += ", \"count\": " + std::to_string(g.count) + ", \"verdict\": ";
    append_json_string(o, g.allowed ? "allowed" : "disallowed");
    o += "}";
  }
  o += "], \"values\": {";
  for (size_t i = 0; i < f.values.size(); ++i) {
    if (i) o += ", ";
    append_json_string(o, f.values[i].first);
    o += ": " + f.values[i].second;
  }
  o += "}, \"values_omitted\": " + std::to_string(f.values_omitted) + "}";
  return o;
}

std::vector<std::pair<std::string, std::string>> details_text(const Facts& f) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("container", f.legacy ? "legacy torch.save (pre-1.6)" : "torch.save ZIP, prefix " + f.prefix);
  out.emplace_back(f.legacy ? "protocol version" : "version", f.version);
  out.emplace_back("byte order", f.byteorder);
  out.emplace_back("pickle protocol", std::to_string(f.pickle_protocol));
  out.emplace_back("storages", std::to_string(f.storages));
  std::string globals;
  for (const auto& g : f.globals) {
    if (!globals.empty()) globals += ", ";
    globals += pickle::global_name(g);
  }
  out.emplace_back("globals (all allowlisted)", globals.empty() ? "none" : globals);
  for (size_t i = 0; i < f.values.size() && i < kTextValues; ++i) {
    std::string v = f.values[i].second;
    if (v.size() > kTextValueChars) v = v.substr(0, kTextValueChars) + "...";
    out.emplace_back(f.values[i].first, v);
  }
  const uint64_t more = f.values_omitted + (f.values.size() > kTextValues ? f.values.size() - kTextValues : 0);
  if (more) out.emplace_back("other values", std::to_string(more) + " more (see --json)");
  return out;
}

}  // namespace amn::pth
