// The one embind binding file: glue only. Every rule (options, limits, names, layouts,
// JSON views, the command line) is the session layer's (src/session); this file turns
// its values into JS values. The protocol is docs/session-protocol.md.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cast.h"
#include "session/command_line.h"
#include "session/ollama.h"
#include "session/open.h"
#include "session/output.h"
#include "session/registry.h"
#include "session/session.h"
#include "session/views.h"
#include "core/json.h"

using emscripten::val;

namespace {

// Text reaches JS through one TextDecoder pass over a view of its bytes. embind's own
// std::string return (Emscripten 3.1.6) copies the string into a fresh malloc and scans it
// twice byte by byte in JS for NULs before decoding: over a third of a 1,008-tensor model's
// info() (2.9 ms, 1.8 without them). The view is read before this returns, while `s` lives.
val text(std::string_view s) {
  static const val decoder = val::global("TextDecoder").new_();
  return decoder.call<val>("decode", val(emscripten::typed_memory_view(s.size(), reinterpret_cast<const uint8_t*>(s.data()))));
}

// Statuses reach JS as one JSON.parse of the session's status document (a need_bytes
// answer names hundreds of ranges: one parse beats a property call per field).
val status(const amn::Status& st) {
  static const val ok = val::global("JSON").call<val>("parse", text(amn::status_json(nullptr)));
  return st ? ok : val::global("JSON").call<val>("parse", text(amn::status_json(&st.error())));
}

val byte_view(const std::vector<uint8_t>& bytes) {
  return val(emscripten::typed_memory_view(bytes.size(), bytes.data()));
}

void free_malloced(uint8_t* p) { std::free(p); }

// The JS class: amn::Session with JS values at the edges.
class Session : public amn::Session {
 public:
  explicit Session(const std::string& limits_json) : amn::Session(limits_json) {}
  int add_file(const std::string& name, double size) {
    return static_cast<int>(amn::Session::add_file(name, static_cast<uint64_t>(size)));
  }
  val add_bytes(int file, double offset, double ptr, double length) {
    amn::SparseSource::Buffer buffer(reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(ptr)), free_malloced);
    return status(amn::Session::add_bytes(static_cast<uint32_t>(file), static_cast<uint64_t>(offset),
                                          std::move(buffer), static_cast<uint64_t>(length)));
  }
  val parse() { return status(amn::Session::parse()); }
  bool config_matters() const { return amn::Session::config_matters(); }
  val read_late_config() { return status(amn::Session::read_late_config()); }
  val plan_convert(const std::string& json, const std::string& destination) {
    return status(amn::Session::plan_convert(std::string_view(json), destination));
  }
  val plan_forget(const std::string& json, const std::string& destination) {
    return status(amn::Session::plan_forget(std::string_view(json), nullptr, destination));
  }
  // The importance matrix file's bytes, malloc'd by the caller: parsed, then freed.
  val set_imatrix(double ptr, double length) {
    std::unique_ptr<uint8_t, void (*)(uint8_t*)> bytes(reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(ptr)), free_malloced);
    return status(amn::Session::set_imatrix(std::span<const uint8_t>(bytes.get(), static_cast<size_t>(length))));
  }
  // A --tensor-type-file's text (JS string, UTF-8 here).
  void set_tensor_type_file(const std::string& text) { amn::Session::set_tensor_type_file(text); }
  // Declared here, not bound from amn::Session: embind waits forever for a base class
  // that is never registered, and the method silently never appears.
  val like_output_format() const { return text(amn::Session::like_output_format()); }
  val plan_forget_like(const std::string& json, Session& like, const std::string& destination) {
    return status(amn::Session::plan_forget(std::string_view(json), &like, destination));
  }
  int prepare_count() const { return static_cast<int>(amn::Session::prepare_count()); }
  val run_prepare(int i) { return status(i < 0 ? amn::make_error(amn::ErrorCode::invalid_argument, "no such prepare") : amn::Session::run_prepare(static_cast<size_t>(i))); }
  val finish_prepared() { return status(amn::Session::finish_prepared()); }
  val forget_report() const { return text(amn::Session::forget_report_json()); }
  val forget_text() const { return text(amn::Session::forget_report_text()); }
  val forget_config() const { return text(amn::Session::forget_config_json()); }
  val plan_tensor(const std::string& name, const std::string& to) { return status(amn::Session::plan_tensor(name, to)); }
  val plan_stats(const std::string& name, bool detail) {
    return status(amn::Session::plan_stats(name, detail ? amn::StatsDetail::page : amn::StatsDetail::cli));
  }
  int stats_step_count() const { return static_cast<int>(amn::Session::stats_step_count()); }
  val run_stats_step(int i) { return status(i < 0 ? amn::make_error(amn::ErrorCode::invalid_argument, "no such step") : amn::Session::run_stats_step(static_cast<size_t>(i))); }
  val stats_json() const { return text(amn::Session::stats_json()); }
  val stats_text() const { return text(amn::Session::stats_text()); }
  val stats_names() const { return text(amn::Session::stats_names_json()); }
  val plan_hash(bool dequantized) {
    return status(amn::Session::plan_hash(dequantized ? amn::HashOf::values : amn::HashOf::stored));
  }
  int hash_step_count() const { return static_cast<int>(amn::Session::hash_step_count()); }
  val run_hash_step(int i) { return status(i < 0 ? amn::make_error(amn::ErrorCode::invalid_argument, "no such step") : amn::Session::run_hash_step(static_cast<size_t>(i))); }
  val hash_json() const { return text(amn::Session::hash_json()); }
  val hash_text(const std::string& path) const { return text(amn::Session::hash_text(path)); }
  val plan_diff(const Session& other, bool exact_names) {
    return status(amn::Session::plan_diff(other, {.map_names = !exact_names}));
  }
  int diff_step_count() const { return static_cast<int>(amn::Session::diff_step_count()); }
  int diff_step_side(int i) const { return i < 0 ? 0 : amn::Session::diff_step_side(static_cast<size_t>(i)); }
  val run_diff_step(int i, Session& other) { return status(i < 0 ? amn::make_error(amn::ErrorCode::invalid_argument, "no such step") : amn::Session::run_diff_step(static_cast<size_t>(i), other)); }
  val diff_json() const { return text(amn::Session::diff_json()); }
  val diff_text() const { return text(amn::Session::diff_text()); }
  int diff_exit_status() const { return amn::Session::diff_exit_status(); }
  val select_shard(int k) { return status(k < 0 ? amn::make_error(amn::ErrorCode::invalid_argument, "no such shard") : amn::Session::select_shard(static_cast<size_t>(k))); }
  val output_header() const { return byte_view(amn::Session::output_header()); }
  int piece_count() const { return static_cast<int>(amn::Session::piece_count()); }
  val run_piece(int i) { return status(i < 0 ? amn::make_error(amn::ErrorCode::invalid_argument, "no such piece") : amn::Session::run_piece(static_cast<size_t>(i))); }
  val piece_output() const { return byte_view(amn::Session::piece_output()); }
  val info() const { return text(amn::Session::info_json()); }
  val render_text(const std::string& kind) const { return text(amn::Session::render_text(kind)); }
  val shards_info() const { return text(amn::Session::shards_info_json()); }
  val plan_info() const { return text(amn::Session::plan_info_json()); }
  val output_plan(const std::string& json) const { return text(amn::Session::output_plan_json(json)); }
  void release_data() { amn::Session::release_data(); }
};

val usage_error_text(const std::string& message) { return text(amn::usage_error_text(message)); }
val version() { return text(AMN_VERSION); }
val active_impl() { return text(amn::active_impl_name()); }

val model_files_in_folder(const std::string& names_json) {
  amn::JsonWriter w;
  return text(w.strings(amn::model_files_in_folder(amn::strings_from_json(names_json))).take());
}

// The command line as the native amn parses it. argv comes as its words each ended by a
// NUL (no word of argv can hold one), not as JSON: a cold `amn inspect` of a GGUF parses no
// other JSON, and compiling simdjson's parser for argv alone cost ~1 ms of it.
val parse_command_line(const std::string& words) {
  std::vector<std::string> args;
  for (size_t at = 0; at < words.size();) {
    const size_t end = std::min(words.find('\0', at), words.size());
    args.emplace_back(words, at, end - at);
    at = end + 1;
  }
  return text(amn::command_line_json(amn::parse_command_line(args)));
}

// The output policy (session/output.h) in one JSON call: {request, shardedInput,
// destination: "path"|"per_file"|"single", surface: "cli"|"api", place: {path, isFolder,
// absolute} | {stem, folder, folderOutputParent}} -> {"ok":true,"folder","single","target"}.
// Without a model: a Session's outputPlan names remember's lossless output from its model.
val output_plan(const std::string& json) { return text(amn::output_plan_json(json)); }

val version_text(const std::string& kernels) { return text(amn::version_text(kernels)); }
// A message that starts with an option's npm key ("tensorType: ..."), spelled as the native
// CLI spells it ("--tensor-type: ..."): the Node CLI's forget errors (option_spelled).
val cli_spelled(const std::string& message) {
  return text(amn::option_spelled(amn::make_error(amn::ErrorCode::invalid_argument, message), amn::Surface::cli).message);
}
val progress_line(const std::string& label, double done, double total) {
  return text(amn::progress_line(label, static_cast<uint64_t>(done), static_cast<uint64_t>(total)));
}
val wrote_line(const std::string& target, bool folder, double shards, double tensors, double bytes) {
  return text(amn::wrote_line(target, folder, static_cast<uint64_t>(shards), static_cast<uint64_t>(tensors),
                              static_cast<uint64_t>(bytes)));
}
val error_codes() { return text(amn::error_codes_json()); }
// The CLI's refusals of an output target, as error statuses: "input", "holds", "exists".
val output_refusal(const std::string& kind, const std::string& target, const std::string& input) {
  const amn::Error e = kind == "input"   ? amn::output_is_input(target)
                       : kind == "holds" ? amn::output_holds_input(target, input)
                                         : amn::output_exists(target, amn::Surface::cli);
  return text(amn::status_json(&e));
}
val config_file_names() { return text(amn::config_file_names_json()); }
val forget_schemes() { return text(amn::forget_schemes_json()); }
bool is_url(const std::string& s) { return amn::is_url(s); }
bool is_ollama_spec(const std::string& s) { return amn::is_ollama_spec(s); }
bool entry_is_index(const std::string& name) { return amn::entry_is_index(name); }
double first_read_bytes(const std::string& name) { return static_cast<double>(amn::first_read_bytes(name)); }
bool first_read_streamed(const std::string& name) { return amn::first_read_streamed(name); }
double host_read_piece_bytes() { return static_cast<double>(amn::kHostReadPieceBytes); }
// One step of resolving an `ollama:` name (session/ollama.h); the manifest's bytes arrive
// as a Uint8Array (embind copies it into the std::string).
val ollama_step(const std::string& facts_json, const std::string& manifest) {
  return text(amn::ollama_step_json(facts_json, manifest));
}
val no_model_files(const std::string& folder) {
  const amn::Error e = amn::no_model_files(folder);
  return text(amn::status_json(&e));
}

}  // namespace

EMSCRIPTEN_BINDINGS(anamnesis) {
  emscripten::function("version", &version);
  emscripten::function("activeImpl", &active_impl);
  emscripten::function("errorCodes", &error_codes);
  emscripten::function("configFileNames", &config_file_names);
  emscripten::function("forgetSchemes", &forget_schemes);
  emscripten::function("modelFilesInFolder", &model_files_in_folder);
  emscripten::function("entryIsIndex", &entry_is_index);
  emscripten::function("firstReadBytes", &first_read_bytes);
  emscripten::function("firstReadStreamed", &first_read_streamed);
  emscripten::function("hostReadPieceBytes", &host_read_piece_bytes);
  emscripten::function("noModelFiles", &no_model_files);
  emscripten::function("isUrl", &is_url);
  emscripten::function("ollamaStep", &ollama_step);
  emscripten::function("isOllamaSpec", &is_ollama_spec);
  emscripten::function("parseCommandLine", &parse_command_line);
  emscripten::function("usageErrorText", &usage_error_text);
  emscripten::function("versionText", &version_text);
  emscripten::function("cliSpelled", &cli_spelled);
  emscripten::function("outputPlan", &output_plan);
  emscripten::function("outputRefusal", &output_refusal);
  emscripten::function("progressLine", &progress_line);
  emscripten::function("wroteLine", &wrote_line);
  emscripten::class_<Session>("Session")
      .constructor<std::string>()
      .function("addFile", &Session::add_file)
      .function("addBytes", &Session::add_bytes)
      .function("parse", &Session::parse)
      .function("configMatters", &Session::config_matters)
      .function("readLateConfig", &Session::read_late_config)
      .function("info", &Session::info)
      .function("renderText", &Session::render_text)
      .function("planConvert", &Session::plan_convert)
      .function("planTensor", &Session::plan_tensor)
      .function("planForget", &Session::plan_forget)
      .function("planStats", &Session::plan_stats)
      .function("statsStepCount", &Session::stats_step_count)
      .function("runStatsStep", &Session::run_stats_step)
      .function("statsJson", &Session::stats_json)
      .function("statsText", &Session::stats_text)
      .function("statsNames", &Session::stats_names)
      .function("planHash", &Session::plan_hash)
      .function("hashStepCount", &Session::hash_step_count)
      .function("runHashStep", &Session::run_hash_step)
      .function("hashJson", &Session::hash_json)
      .function("hashText", &Session::hash_text)
      .function("planForgetLike", &Session::plan_forget_like)
      .function("planDiff", &Session::plan_diff)
      .function("diffStepCount", &Session::diff_step_count)
      .function("diffStepSide", &Session::diff_step_side)
      .function("runDiffStep", &Session::run_diff_step)
      .function("diffJson", &Session::diff_json)
      .function("diffText", &Session::diff_text)
      .function("diffExitStatus", &Session::diff_exit_status)
      .function("setImatrix", &Session::set_imatrix)
      .function("likeOutputFormat", &Session::like_output_format)
      .function("setTensorTypeFile", &Session::set_tensor_type_file)
      .function("prepareCount", &Session::prepare_count)
      .function("runPrepare", &Session::run_prepare)
      .function("finishPrepared", &Session::finish_prepared)
      .function("forgetReport", &Session::forget_report)
      .function("forgetText", &Session::forget_text)
      .function("forgetConfig", &Session::forget_config)
      .function("shardsInfo", &Session::shards_info)
      .function("selectShard", &Session::select_shard)
      .function("planInfo", &Session::plan_info)
      .function("outputPlan", &Session::output_plan)
      .function("outputHeader", &Session::output_header)
      .function("pieceCount", &Session::piece_count)
      .function("runPiece", &Session::run_piece)
      .function("pieceOutput", &Session::piece_output)
      .function("releaseData", &Session::release_data);
}
