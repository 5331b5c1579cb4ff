// The one embind binding file: a thin Session over the core, with no logic of its own
// beyond turning values into JS objects. The protocol is docs/session-protocol.md.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <simdjson.h>

#include "convert/execute.h"
#include "convert/plan.h"
#include "convert/shard.h"
#include "core/json.h"
#include "formats/gguf/kv_input.h"
#include "formats/open.h"
#include "kernels/cast.h"
#include "report/report.h"

using emscripten::val;

namespace {

void free_malloced(uint8_t* p) { std::free(p); }

// Statuses reach JS as plain objects. Setting their properties one by one through
// embind cost a call per field, and a need_bytes answer for a checkpoint names hundreds
// of ranges (4 calls each): so the status is written as JSON and parsed once in JS.
// The ok status is one shared object (callers only read it).
val ok_status() {
  static const val ok = val::global("JSON").call<val>("parse", std::string("{\"ok\":true}"));
  return ok;
}

val error_status(const amn::Error& e) {
  std::string j = "{\"ok\":false,\"code\":";
  amn::append_json_string(j, amn::error_code_name(e.code));
  j += ",\"message\":";
  amn::append_json_string(j, e.message);
  j += ",\"offset\":" + (e.offset == amn::kNoOffset ? std::string("-1") : std::to_string(e.offset));
  if (!e.need_bytes.empty()) {
    j += ",\"needBytes\":[";
    for (size_t i = 0; i < e.need_bytes.size(); ++i) {
      if (i) j += ',';
      j += "{\"file\":" + std::to_string(e.need_bytes[i].file) + ",\"offset\":" + std::to_string(e.need_bytes[i].offset) +
           ",\"length\":" + std::to_string(e.need_bytes[i].length) + "}";
    }
    j += ']';
  }
  if (!e.need_files.empty()) {
    j += ",\"needFiles\":[";
    for (size_t i = 0; i < e.need_files.size(); ++i) {
      if (i) j += ',';
      amn::append_json_string(j, e.need_files[i]);
    }
    j += ']';
  }
  j += '}';
  return val::global("JSON").call<val>("parse", j);
}

template <class T>
val status_of(const amn::Result<T>& r) {
  return r ? ok_status() : error_status(r.error());
}

val byte_view(const std::vector<uint8_t>& bytes) {
  return val(emscripten::typed_memory_view(bytes.size(), bytes.data()));
}

std::optional<amn::ParseLimits> limits_from_json(const std::string& json) {
  amn::ParseLimits limits;
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  if (parser.parse(json).get_object().get(obj)) return std::nullopt;
  for (auto kv : obj) {
    double d;
    if (kv.value.get_double().get(d) || !(d > 0)) return std::nullopt;
    if (kv.key == "max_single_alloc") limits.max_single_alloc = static_cast<uint64_t>(d);
    else if (kv.key == "max_total_bytes") limits.max_total_bytes = static_cast<uint64_t>(d);
    else if (kv.key == "max_item_count") limits.max_item_count = static_cast<uint64_t>(d);
    else if (kv.key == "max_decompression_ratio") limits.max_decompression_ratio = d;
    else return std::nullopt;
  }
  return limits;
}

class Session {
 public:
  explicit Session(const std::string& limits_json) {
    auto limits = limits_from_json(limits_json.empty() ? "{}" : limits_json);
    if (limits) limits_ = *limits;
    else bad_limits_ = true;
  }

  int add_file(const std::string& name, double size) {
    auto source = std::make_unique<amn::SparseSource>(static_cast<uint64_t>(size));
    sparse_.push_back(source.get());
    return static_cast<int>(files_.add(name, std::move(source)));
  }

  val add_bytes(int file, double offset, double ptr, double length) {
    amn::SparseSource::Buffer buffer(reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(ptr)), free_malloced);
    if (file < 0 || static_cast<size_t>(file) >= sparse_.size()) {
      return error_status(amn::make_error(amn::ErrorCode::invalid_argument, "no such file"));
    }
    return status_of(sparse_[file]->add(static_cast<uint64_t>(offset), std::move(buffer), static_cast<uint64_t>(length)));
  }

  val parse() {
    if (bad_limits_) {
      return error_status(amn::make_error(amn::ErrorCode::invalid_argument, "limits must be an object of positive numbers"));
    }
    auto model = amn::open_model(files_, limits_);
    if (!model) return error_status(model.error());
    model_ = std::move(model).value();
    return ok_status();
  }

  std::string info() const { return model_ ? amn::model_info_json(*model_) : std::string(); }

  std::string render_text(const std::string& kind) const {
    if (!model_) return {};
    return kind == "parse" ? amn::render_parse(*model_) : amn::render_inspect(*model_);
  }

  val plan_convert(const std::string& options_json) {
    if (!model_) return error_status(amn::make_error(amn::ErrorCode::invalid_argument, "parse the model first"));
    simdjson::dom::parser parser;
    simdjson::dom::object obj;
    if (parser.parse(options_json).get_object().get(obj)) {
      return error_status(amn::make_error(amn::ErrorCode::invalid_argument, "convert options must be a JSON object"));
    }
    amn::ConvertOptions options;
    std::vector<std::pair<std::string, amn::GgufValue>> from_file, from_args;
    std::string_view to = "safetensors";
    bool sharded = false;  // "shards": "input", or a max_shard_size: a ShardedPlan
    amn::ShardOptions shard;
    for (auto kv : obj) {
      if (kv.key == "to") {
        if (kv.value.get_string().get(to)) to = "";
      } else if (kv.key == "dtype" && !kv.value.is_null()) {
        std::string_view d;
        if (kv.value.get_string().get(d) || !amn::float_target_from_name(d)) {
          return error_status(amn::make_error(amn::ErrorCode::invalid_argument, "dtype must be bf16, f16 or f32"));
        }
        options.dtype = amn::float_target_from_name(d);
      } else if (kv.key == "cast_all" && !kv.value.is_null()) {
        if (kv.value.get_bool().get(options.cast_all)) {
          return error_status(amn::make_error(amn::ErrorCode::invalid_argument, "cast_all must be true or false"));
        }
      } else if (kv.key == "gguf_metadata" && !kv.value.is_null()) {
        // The same shapes `--gguf-metadata file.json` takes (formats/gguf/kv_input.h).
        std::string_view text;  // JSON text (a file's contents), or the object itself
        std::string owned;
        if (kv.value.get_string().get(text)) {
          owned = simdjson::to_string(kv.value);
          text = owned;
        }
        auto parsed = amn::parse_gguf_kv_json(text);
        if (!parsed) return error_status(parsed.error());
        from_file = std::move(parsed).value();
      } else if (kv.key == "shards" && !kv.value.is_null()) {
        std::string_view mode;
        int64_t one = 0;
        if (!kv.value.get_string().get(mode) && mode == "input") {
          sharded = true;
        } else if (kv.value.get_int64().get(one) || one != 1) {
          return error_status(amn::make_error(amn::ErrorCode::invalid_argument, "shards must be \"input\" or 1"));
        }
      } else if (kv.key == "max_shard_size" && !kv.value.is_null()) {
        // A number of bytes, or a size string as the CLI's --max-shard-size takes it.
        std::string_view text;
        double bytes = 0;
        if (!kv.value.get_string().get(text)) {
          auto parsed = amn::parse_shard_size(text);
          if (!parsed) return error_status(parsed.error());
          shard.max_shard_bytes = *parsed;
        } else if (!kv.value.get_double().get(bytes) && bytes >= 1 && bytes <= 9.0e15) {
          shard.max_shard_bytes = static_cast<uint64_t>(bytes);
        } else {
          return error_status(amn::make_error(amn::ErrorCode::invalid_argument, "max_shard_size must be a size (\"5GB\") or a number of bytes"));
        }
        sharded = true;
      } else if (kv.key == "gguf_kv" && !kv.value.is_null()) {
        simdjson::dom::array args;
        if (kv.value.get_array().get(args)) {
          return error_status(amn::make_error(amn::ErrorCode::invalid_argument, "gguf_kv must be an array of \"key=value\" strings"));
        }
        for (auto a : args) {
          std::string_view text;
          if (a.get_string().get(text)) {
            return error_status(amn::make_error(amn::ErrorCode::invalid_argument, "gguf_kv must be an array of \"key=value\" strings"));
          }
          auto parsed = amn::parse_gguf_kv_arg(text);
          if (!parsed) return error_status(parsed.error());
          from_args.push_back(std::move(parsed).value());
        }
      }
    }
    // As the native CLI: the metadata file first, then each key=value, later ones winning.
    amn::merge_gguf_kv(options.gguf_kv, std::move(from_file));
    for (auto& kv : from_args) amn::merge_gguf_kv(options.gguf_kv, {std::move(kv)});
    if (to == "gguf") {
      options.to = amn::OutputFormat::gguf;
    } else if (to != "safetensors") {
      return error_status(amn::make_error(amn::ErrorCode::unsupported, "convert target must be \"safetensors\" or \"gguf\""));
    }
    clear_plans();
    if (sharded) {
      auto split = amn::plan_shards(*model_, options, shard);
      if (!split) return error_status(split.error());
      for (auto& s : split->shards) {
        shard_names_.push_back(std::move(s.name));
        plans_.push_back(std::move(s.plan));
      }
      index_json_ = std::move(split->index_json);
      total_size_ = split->total_size;
      return ok_status();
    }
    auto plan = amn::plan_convert(*model_, options);
    if (!plan) return error_status(plan.error());
    plans_.push_back(std::move(plan).value());
    return ok_status();
  }

  // The files of a sharded plan: {"files":[{"name","tensors","output_bytes"}],
  // "index": the index JSON text or null (one shard), "total_size"}. "null" without one.
  std::string shards_info() const {
    if (shard_names_.empty()) return "null";
    std::string o = "{\"files\":[";
    for (size_t i = 0; i < plans_.size(); ++i) {
      if (i) o += ',';
      o += "{\"name\":";
      amn::append_json_string(o, shard_names_[i]);
      o += ",\"tensors\":" + std::to_string(plans_[i].tensors.size()) +
           ",\"output_bytes\":" + std::to_string(plans_[i].output_bytes()) + "}";
    }
    o += "],\"index\":";
    if (index_json_.empty()) o += "null";
    else amn::append_json_string(o, index_json_);
    return o + ",\"total_size\":" + std::to_string(total_size_) + "}";
  }

  // Makes shard `k` the plan planInfo/outputHeader/pieceCount/runPiece work on.
  val select_shard(int k) {
    if (k < 0 || static_cast<size_t>(k) >= plans_.size()) {
      return error_status(amn::make_error(amn::ErrorCode::invalid_argument, "no such shard"));
    }
    current_ = static_cast<size_t>(k);
    return ok_status();
  }

  val plan_tensor(const std::string& name, const std::string& to) {
    if (!model_) return error_status(amn::make_error(amn::ErrorCode::invalid_argument, "parse the model first"));
    std::optional<amn::DType> dtype;
    if (!to.empty()) {
      dtype = amn::float_target_from_name(to);
      if (!dtype) return error_status(amn::make_error(amn::ErrorCode::invalid_argument, "to must be bf16, f16 or f32"));
    }
    auto plan = amn::plan_tensor(*model_, name, dtype);
    if (!plan) return error_status(plan.error());
    clear_plans();
    plans_.push_back(std::move(plan).value());
    return ok_status();
  }

  std::string plan_info() const {
    const amn::Plan* p = plan();
    if (!p) return "null";
    std::string o = "{\"tensors\":[";
    for (size_t i = 0; i < p->tensors.size(); ++i) {
      const auto& t = p->tensors[i];
      if (i) o += ',';
      o += "{\"name\":";
      amn::append_json_string(o, t.name);
      o += ",\"dtype\":";
      amn::append_json_string(o, amn::dtype_name(t.dtype));
      o += ",\"shape\":[";
      for (size_t d = 0; d < t.shape.size(); ++d) o += (d ? "," : "") + std::to_string(t.shape[d]);
      o += "],\"nbytes\":" + std::to_string(t.nbytes) + "}";
    }
    o += "],\"pieces\":" + std::to_string(p->pieces.size()) +
         ",\"output_bytes\":" + std::to_string(p->output_bytes()) +
         ",\"header_bytes\":" + std::to_string(p->header.size()) + "}";
    return o;
  }

  val output_header() const { return plan() ? byte_view(plan()->header) : byte_view(empty_); }
  int piece_count() const { return plan() ? static_cast<int>(plan()->pieces.size()) : 0; }

  val run_piece(int i) {
    const amn::Plan* p = plan();
    if (!p || i < 0 || static_cast<size_t>(i) >= p->pieces.size()) {
      return error_status(amn::make_error(amn::ErrorCode::invalid_argument, "no such piece"));
    }
    output_.resize(p->pieces[i].out_length);
    return status_of(amn::run_piece(*p, i, files_, output_, &scheme_inputs_));
  }

  val piece_output() const { return byte_view(output_); }

  void release_data() {
    for (auto* s : sparse_) s->clear();
    output_.clear();
    output_.shrink_to_fit();
  }

 private:
  amn::ParseLimits limits_;
  bool bad_limits_ = false;
  amn::FileSet files_;
  std::vector<amn::SparseSource*> sparse_;  // owned by files_
  std::optional<amn::Model> model_;
  // The current plan is plans_[current_]: one plan, or one per shard of a sharded output.
  std::vector<amn::Plan> plans_;
  std::vector<std::string> shard_names_;  // empty unless sharded
  std::string index_json_;
  uint64_t total_size_ = 0;
  size_t current_ = 0;

  const amn::Plan* plan() const { return current_ < plans_.size() ? &plans_[current_] : nullptr; }
  void clear_plans() {
    plans_.clear();
    shard_names_.clear();
    index_json_.clear();
    total_size_ = 0;
    current_ = 0;
  }
  std::vector<uint8_t> output_;
  amn::SchemeInputCache scheme_inputs_;  // kept across releaseData(): a layer's pieces share inputs
  const std::vector<uint8_t> empty_;
};

std::string version() { return AMN_VERSION; }
std::string active_impl() { return std::string(amn::active_impl_name()); }

// The folder rule (formats/open.h), so JS picks a folder's model files exactly as the
// native CLI does: names in, names out, as JSON arrays of strings.
std::string model_files_in_folder_json(const std::string& names_json) {
  simdjson::dom::parser parser;
  simdjson::dom::array arr;
  std::vector<std::string> names;
  if (!parser.parse(names_json).get_array().get(arr)) {
    for (auto v : arr) {
      std::string_view s;
      if (!v.get_string().get(s)) names.emplace_back(s);
    }
  }
  std::string o = "[";
  bool first = true;
  for (const auto& n : amn::model_files_in_folder(std::move(names))) {
    if (!first) o += ',';
    first = false;
    amn::append_json_string(o, n);
  }
  return o + "]";
}

std::string error_codes() {
  std::string o = "[";
  for (int c = 0; c <= static_cast<int>(amn::ErrorCode::disallowed_global); ++c) {
    if (c) o += ',';
    amn::append_json_string(o, amn::error_code_name(static_cast<amn::ErrorCode>(c)));
  }
  return o + "]";
}

}  // namespace

EMSCRIPTEN_BINDINGS(anamnesis) {
  emscripten::function("version", &version);
  emscripten::function("activeImpl", &active_impl);
  emscripten::function("errorCodes", &error_codes);
  emscripten::function("modelFilesInFolder", &model_files_in_folder_json);
  emscripten::class_<Session>("Session")
      .constructor<std::string>()
      .function("addFile", &Session::add_file)
      .function("addBytes", &Session::add_bytes)
      .function("parse", &Session::parse)
      .function("info", &Session::info)
      .function("renderText", &Session::render_text)
      .function("planConvert", &Session::plan_convert)
      .function("planTensor", &Session::plan_tensor)
      .function("shardsInfo", &Session::shards_info)
      .function("selectShard", &Session::select_shard)
      .function("planInfo", &Session::plan_info)
      .function("outputHeader", &Session::output_header)
      .function("pieceCount", &Session::piece_count)
      .function("runPiece", &Session::run_piece)
      .function("pieceOutput", &Session::piece_output)
      .function("releaseData", &Session::release_data);
}
