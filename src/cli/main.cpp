// amn: the native command-line interface. Uses only the core's public headers.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "cli/local_files.h"
#include "cli/output_file.h"
#include "cli/output_folder.h"
#include "cli/progress.h"
#include "convert/execute.h"
#include "convert/plan.h"
#include "convert/shard.h"
#include "core/limits.h"
#include "formats/gguf/kv_input.h"
#include "kernels/cast.h"
#include "report/report.h"

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

int fail(const amn::Error& e) {
  std::fprintf(stderr, "amn: error [%s]: %s\n", std::string(amn::error_code_name(e.code)).c_str(),
               e.message.c_str());
  return 1;
}

int run_report(const std::string& path, bool json, bool parse_view) {
  auto local = amn::cli::open_local(path, {});
  if (!local) return fail(local.error());
  const std::string out = json ? amn::model_info_json(local->model)
                               : (parse_view ? amn::render_parse(local->model) : amn::render_inspect(local->model));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

struct ConvertRequest {
  std::string path, output, dtype;
  bool force = false;
  bool quiet = false;
  bool cast_all = false;                     // --cast-all: a quantized model's other tensors too
  bool no_sync = false;                      // --no-sync: skip the fsyncs (scratch outputs)
  std::string format = "safetensors";        // convert --to
  std::vector<std::string> gguf_kv;          // --gguf-kv key[:TYPE]=value
  std::string gguf_metadata;                 // --gguf-metadata file.json
  std::string shards;                        // --shards 1|input ("": input's, unless -o names a file)
  std::string max_shard_size;                // --max-shard-size 5GB
};

// Reads a small text file (the --gguf-metadata JSON) whole.
amn::Result<std::string> read_text_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return amn::make_error(amn::ErrorCode::io, "cannot open " + path);
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    text.append(buf, n);
    if (text.size() > amn::kHardMaxSafetensorsHeader) {
      std::fclose(f);
      return amn::make_error(amn::ErrorCode::limit, path + " is larger than 100 MB");
    }
  }
  std::fclose(f);
  return text;
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

struct OutputLayout {
  bool folder = false;       // shards + index in a folder, rather than one file
  amn::ShardOptions shard;
};

// One file or a folder of shards. A sharded safetensors input gives a sharded output
// (same boundaries) unless --shards 1, or -o names a .safetensors file; --max-shard-size
// always gives a folder. GGUF output is one file.
amn::Result<OutputLayout> output_layout(const ConvertRequest& req, const amn::Model& model) {
  OutputLayout out;
  const bool sized = !req.max_shard_size.empty();
  if (sized) {
    auto bytes = amn::parse_shard_size(req.max_shard_size);
    if (!bytes) return bytes.error();
    out.shard.max_shard_bytes = *bytes;
  }
  const bool asked = sized || req.shards == "input";
  if (req.shards == "1") {
    if (sized) return amn::make_error(amn::ErrorCode::invalid_argument, "--max-shard-size and --shards 1 contradict each other");
    return out;
  }
  if (req.format != "safetensors") {
    if (asked) return amn::make_error(amn::ErrorCode::unsupported, "sharded output is written as safetensors only (GGUF output is one file)");
    return out;
  }
  const bool names_file = ends_with(req.output, ".safetensors");
  if (asked && names_file) {
    return amn::make_error(amn::ErrorCode::invalid_argument,
                           req.output + " names a file: a sharded output is a folder (or pass --shards 1)");
  }
  out.folder = asked || (model.sharded && !names_file);
  return out;
}

// Never write over one of the inputs, even with --force: inputs are read-only. A folder
// target must not hold one either (replacing it would delete it).
amn::Status check_not_an_input(const amn::cli::LocalModel& local, const std::string& target, bool folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dest = fs::weakly_canonical(fs::absolute(target, ec), ec);
  if (!dest.has_filename()) dest = dest.parent_path();  // "out/" is the folder "out"
  for (size_t i = 0; i < local.files->count(); ++i) {
    auto input = fs::path(local.folder) / local.files->name(i);
    if (fs::equivalent(input, target, ec)) {
      return amn::make_error(amn::ErrorCode::invalid_argument, target + " is an input of this conversion");
    }
    if (!folder) continue;
    const fs::path in = fs::weakly_canonical(fs::absolute(input, ec), ec);
    auto [d, _] = std::mismatch(dest.begin(), dest.end(), in.begin(), in.end());
    if (d == dest.end()) {
      return amn::make_error(amn::ErrorCode::invalid_argument, target + " holds an input of this conversion (" +
                                                                   local.files->name(i) + ")");
    }
  }
  return {};
}

// Shards and index into a temporary folder, renamed into place when all are written.
int write_folder(amn::cli::LocalModel& local, const amn::ConvertOptions& options, const amn::ShardOptions& shard,
                 const std::string& target, const ConvertRequest& req, amn::cli::ProgressBar& bar,
                 amn::ExecuteHooks hooks) {
  auto plan = amn::plan_shards(local.model, options, shard);
  if (!plan) return fail(plan.error());
  auto folder = amn::cli::OutputFolder::create(target, req.force, !req.no_sync);
  if (!folder) return fail(folder.error());
  const uint64_t total = plan->output_bytes();
  uint64_t before = 0;  // bytes of the shards already written
  hooks.progress = [&](uint64_t done, uint64_t) { bar.update(before + done, total); };
  size_t tensors = 0;
  for (const auto& s : plan->shards) {
    auto file = (*folder)->open(s.name);
    if (!file) return fail(file.error());
    auto st = amn::execute_plan(s.plan, *local.files, **file, hooks);
    if (st) st = (*file)->commit();
    if (!st) return fail(st.error());
    before += s.plan.output_bytes();
    tensors += s.plan.tensors.size();
  }
  if (!plan->index_json.empty()) {
    auto file = (*folder)->open(std::string(amn::kShardIndexName));
    if (!file) return fail(file.error());
    const auto* p = reinterpret_cast<const uint8_t*>(plan->index_json.data());
    auto st = (*file)->write({p, plan->index_json.size()});
    if (st) st = (*file)->commit();
    if (!st) return fail(st.error());
  }
  if (g_interrupted) return fail(amn::make_error(amn::ErrorCode::cancelled, "interrupted"));
  if (auto st = (*folder)->commit(); !st) return fail(st.error());
  if (!req.quiet) {
    std::string shown = target;
    while (shown.size() > 1 && shown.back() == '/') shown.pop_back();
    std::printf("wrote %s/ (%zu shard%s, %zu tensors, %s)\n", shown.c_str(), plan->shards.size(),
                plan->shards.size() == 1 ? "" : "s", tensors, amn::human_bytes(plan->output_bytes()).c_str());
  }
  return 0;
}

int run_convert(const ConvertRequest& req, const char* label) {
  amn::ConvertOptions options;
  options.cast_all = req.cast_all;
  if (!req.dtype.empty()) {
    options.dtype = amn::float_target_from_name(req.dtype);
    if (!options.dtype) return fail(amn::make_error(amn::ErrorCode::invalid_argument, "unknown dtype '" + req.dtype + "' (bf16, f16 or f32)"));
  }
  const auto& dtype = options.dtype;
  options.to = req.format == "gguf" ? amn::OutputFormat::gguf : amn::OutputFormat::safetensors;
  if (!req.gguf_metadata.empty()) {
    auto text = read_text_file(req.gguf_metadata);
    if (!text) return fail(text.error());
    auto kv = amn::parse_gguf_kv_json(*text);
    if (!kv) return fail(kv.error());
    amn::merge_gguf_kv(options.gguf_kv, std::move(kv).value());
  }
  for (const auto& arg : req.gguf_kv) {
    auto kv = amn::parse_gguf_kv_arg(arg);
    if (!kv) return fail(kv.error());
    amn::merge_gguf_kv(options.gguf_kv, {std::move(kv).value()});
  }
  auto local = amn::cli::open_local(req.path, {});
  if (!local) return fail(local.error());
  auto layout = output_layout(req, local->model);
  if (!layout) return fail(layout.error());
  std::string suffix = dtype ? std::string(req.dtype) : std::string("converted");
  for (auto& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string target = req.output;
  if (target.empty() && layout->folder) {
    // A sharded output is a folder beside the input (beside the input folder, not in it).
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path where = local->output_folder;
    if (fs::is_directory(req.path, ec)) {
      fs::path input = fs::absolute(req.path, ec).lexically_normal();
      if (!input.has_filename()) input = input.parent_path();  // "/a/b/" names "/a/b"
      where = input.parent_path();
    }
    target = (where / (local->stem + "-" + suffix)).string();
  } else if (target.empty()) {
    target = (std::filesystem::path(local->output_folder) / (local->stem + "-" + suffix + "." + req.format)).string();
  }
  if (auto st = check_not_an_input(*local, target, layout->folder); !st) return fail(st.error());
  amn::cli::ProgressBar bar(label);
  amn::ExecuteHooks hooks;
  hooks.cancelled = [] { return g_interrupted != 0; };
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  if (layout->folder) return write_folder(*local, options, layout->shard, target, req, bar, hooks);
  auto plan = amn::plan_convert(local->model, options);
  if (!plan) return fail(plan.error());
  auto sink = amn::cli::OutputFile::create(target, req.force, !req.no_sync);
  if (!sink) return fail(sink.error());
  hooks.progress = [&](uint64_t done, uint64_t total) { bar.update(done, total); };
  auto st = amn::execute_plan(*plan, *local->files, **sink, hooks);
  if (st) st = (*sink)->commit();
  if (!st) return fail(st.error());
  if (!req.quiet) {
    std::printf("wrote %s (%zu tensors, %s)\n", target.c_str(), plan->tensors.size(),
                amn::human_bytes(plan->output_bytes()).c_str());
  }
  return 0;
}

// Options every writing verb shares.
void add_output_options(CLI::App* verb, ConvertRequest& req) {
  verb->add_flag("--force", req.force, "replace an existing output file or folder");
  verb->add_flag("--no-sync", req.no_sync,
                 "scratch outputs: skip the fsyncs (still written to a temporary name and renamed into place)");
  verb->add_flag("-q,--quiet", req.quiet, "print nothing on success");
}

void add_shard_options(CLI::App* verb, ConvertRequest& req) {
  verb->add_option("--shards", req.shards,
                   "1: one file; input: the input's shard boundaries (default for a sharded input)")
      ->check(CLI::IsMember({"1", "input"}));
  verb->add_option("--max-shard-size", req.max_shard_size,
                   "write a folder of shards of at most this size (5GB, 500MiB, bytes)");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"amn (anamnesis): inspect tensor files and recover full precision from them"};
  app.set_version_flag("--version", std::string("amn ") + AMN_VERSION + " (kernels: " +
                                        std::string(amn::active_impl_name()) + ")");
  app.require_subcommand(1, 1);
  app.footer("Formats: safetensors (single, sharded folder or *.index.json; FP8 and other quantized\n"
             "weights are detected), GGUF (single or split), ollama:<model>[:<tag>],\n"
             "NumPy .npy/.npz, PyTorch .pth/.pt/.bin (a pickle VM that never executes).\nDocs: docs/cli.md");

  std::string path;
  bool json = false;
  auto* parse = app.add_subcommand("parse", "List every stored tensor record with its byte range");
  parse->add_option("PATH", path, "model file, folder or *.index.json")->required();
  parse->add_flag("--json", json, "print the model-info JSON document (docs/json-schema.md)");

  auto* inspect = app.add_subcommand("inspect", "Summarise a model: dtypes, parameters, tensors (header only)");
  inspect->alias("info");
  inspect->add_option("PATH", path, "model file, folder or *.index.json")->required();
  inspect->add_flag("--json", json, "print the model-info JSON document (docs/json-schema.md)");

  ConvertRequest remember_req;
  remember_req.dtype = "bf16";
  auto* remember = app.add_subcommand("remember", "Dequantize / cast to full precision, written as safetensors");
  remember->alias("dequantize");
  remember->add_option("PATH", remember_req.path, "model file, folder or *.index.json")->required();
  remember->add_option("-o,--output", remember_req.output, "output file, or folder for a sharded output (default: <stem>-<dtype>.safetensors, or <stem>-<dtype>/)");
  remember->add_option("--to", remember_req.dtype, "target dtype")->check(CLI::IsMember({"bf16", "f16", "f32"}));
  remember->add_flag("--cast-all", remember_req.cast_all,
                     "quantized models: cast the unquantized tensors (norms, embeddings) to --to as well");
  add_shard_options(remember, remember_req);
  add_output_options(remember, remember_req);

  ConvertRequest convert_req;
  auto* convert = app.add_subcommand("convert", "Convert a model to another format, streaming tensor by tensor");
  convert->add_option("PATH", convert_req.path, "model file, folder or *.index.json")->required();
  convert->add_option("--to", convert_req.format, "output format")->required()->check(CLI::IsMember({"safetensors", "gguf"}));
  convert->add_option("--gguf-kv", convert_req.gguf_kv, "GGUF output: set a KV, key=value or key:TYPE=value (repeatable)");
  convert->add_option("--gguf-metadata", convert_req.gguf_metadata, "GGUF output: KVs from a JSON file ({key: value} or {key: {type, value}})");
  convert->add_option("--dtype", convert_req.dtype, "cast floating tensors to this dtype (default: keep)")
      ->check(CLI::IsMember({"bf16", "f16", "f32"}));
  convert->add_option("-o,--output", convert_req.output, "output file, or folder for a sharded output (default: <stem>-<dtype|converted>.<format>, or <stem>-<dtype|converted>/)");
  convert->add_flag("--cast-all", convert_req.cast_all,
                    "quantized models: cast the unquantized tensors (norms, embeddings) to --dtype as well");
  add_shard_options(convert, convert_req);
  add_output_options(convert, convert_req);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "amn: usage error: %s\nRun 'amn --help' for usage.\n", e.what());
    return 2;
  }

  if (auto forced = amn::check_forced_impl(); !forced) return fail(forced.error());  // AMN_FORCE_IMPL typo
  if (*parse) return run_report(path, json, true);
  if (*inspect) return run_report(path, json, false);
  if (*remember) return run_convert(remember_req, "remember");
  if (*convert) return run_convert(convert_req, "convert");
  return 2;
}
