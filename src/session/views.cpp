#include "session/views.h"

#include <simdjson.h>

#include "core/json.h"
#include "schemes/forget.h"
#include "schemes/forget_gguf.h"
#include "kernels/ggml/quantize.h"
#include "schemes/gguf_mix.h"
#include "session/open.h"

namespace amn {

std::string status_json(const Error* e) {
  if (!e) return "{\"ok\":true}";
  JsonWriter w;
  w.begin_object().key("ok").value(false).key("code").value(error_code_name(e->code)).key("message").value(e->message);
  w.key("offset").value(e->offset == kNoOffset ? int64_t{-1} : static_cast<int64_t>(e->offset));
  if (!e->need_bytes.empty()) {
    w.key("needBytes").begin_array();
    for (const auto& r : e->need_bytes) {
      w.begin_object().key("file").value(uint64_t{r.file}).key("offset").value(r.offset).key("length").value(r.length).end_object();
    }
    w.end_array();
  }
  if (!e->need_files.empty()) w.key("needFiles").strings(e->need_files);
  return w.end_object().take();
}

std::string plan_info_json(const Plan& p) {
  JsonWriter w;
  w.begin_object().key("tensors").begin_array();
  for (const auto& t : p.tensors) {
    w.begin_object().key("name").value(t.name).key("dtype").value(dtype_name(t.dtype)).key("shape").begin_array();
    for (uint64_t d : t.shape) w.value(d);
    w.end_array().key("nbytes").value(t.nbytes).end_object();
  }
  w.end_array();
  w.key("pieces").value(uint64_t{p.pieces.size()}).key("output_bytes").value(p.output_bytes());
  w.key("header_bytes").value(uint64_t{p.header.size()});
  return w.end_object().take();
}

std::string shards_info_json(const std::vector<std::string>& names, const std::vector<Plan>& plans,
                             std::string_view index_json, uint64_t total_size) {
  JsonWriter w;
  w.begin_object().key("files").begin_array();
  for (size_t k = 0; k < names.size() && k < plans.size(); ++k) {
    w.begin_object().key("name").value(names[k]).key("tensors").value(uint64_t{plans[k].tensors.size()});
    w.key("output_bytes").value(plans[k].output_bytes()).end_object();
  }
  w.end_array().key("index").string_or_null(index_json).key("index_name").value(kShardIndexName);
  w.key("total_size").value(total_size);
  return w.end_object().take();
}

std::string error_codes_json() {
  JsonWriter w;
  w.begin_array();
  for (int c = 0; c <= static_cast<int>(ErrorCode::disallowed_global); ++c) {
    w.value(error_code_name(static_cast<ErrorCode>(c)));
  }
  return w.end_array().take();
}

std::string config_file_names_json() {
  JsonWriter w;
  w.begin_array();
  for (const char* name : kConfigFileNames) w.value(name);
  return w.end_array().take();
}

std::vector<std::string> strings_from_json(std::string_view json) {
  std::vector<std::string> out;
  simdjson::dom::parser parser;
  simdjson::dom::array arr;
  if (parser.parse(json.data(), json.size()).get_array().get(arr)) return out;
  for (auto v : arr) {
    std::string_view s;
    if (!v.get_string().get(s)) out.emplace_back(s);
  }
  return out;
}

std::string forget_schemes_json() {
  JsonWriter w;
  w.begin_array();
  for (const auto& row : forget_scheme_rows()) {
    w.begin_object().key("name").value(row.name).key("producer").value(row.producer);
    w.key("available").value(row.available).end_object();
  }
  // The ggml types forget writes to GGUF (schemes/forget_gguf.h), marked with their target.
  for (std::string_view type : gguf_forget_types()) {
    w.begin_object().key("name").value(type).key("producer").value("ggml_quantize_chunk (GGUF, llama-quantize --pure)");
    w.key("available").value(true).key("to").value("gguf").key("pure").value(true);
    // ggml makes it only with an importance matrix (--imatrix, the npm API's imatrix)
    w.key("imatrix").value(ggml_quantize_requires_imatrix(*ggml_type_from_name(type))).end_object();
  }
  // llama-quantize's file types that are no ggml type's name (schemes/gguf_mix.h).
  for (const GgufFileTypeRow& row : gguf_file_type_rows()) {
    if (ggml_type_from_name(row.name)) continue;
    w.begin_object().key("name").value(row.name).key("producer").value("llama-quantize's file type (GGUF)");
    w.key("available").value(ggml_can_quantize(row.default_type)).key("to").value("gguf");
    w.key("imatrix").value(gguf_file_type_needs_imatrix(row)).end_object();  // llama-quantize refuses it without one
  }
  return w.end_array().take();
}

}  // namespace amn
