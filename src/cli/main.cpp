// amn: the native command-line interface. Uses only the core's public headers.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/local_files.h"
#include "cli/output_file.h"
#include "cli/progress.h"
#include "convert/execute.h"
#include "convert/plan.h"
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
  std::string format = "safetensors";        // convert --to
  std::vector<std::string> gguf_kv;          // --gguf-kv key[:TYPE]=value
  std::string gguf_metadata;                 // --gguf-metadata file.json
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
  std::string target = req.output;
  if (target.empty()) {
    std::string suffix = dtype ? std::string(req.dtype) : std::string("converted");
    for (auto& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    target = (std::filesystem::path(local->output_folder) / (local->stem + "-" + suffix + "." + req.format)).string();
  }
  // Never write over one of the inputs, even with --force: inputs are read-only.
  std::error_code ec;
  for (size_t i = 0; i < local->files->count(); ++i) {
    auto input = std::filesystem::path(local->folder) / local->files->name(i);
    if (std::filesystem::equivalent(input, target, ec)) {
      return fail(amn::make_error(amn::ErrorCode::invalid_argument, target + " is an input of this conversion"));
    }
  }
  auto plan = amn::plan_convert(local->model, options);
  if (!plan) return fail(plan.error());
  auto sink = amn::cli::OutputFile::create(target, req.force);
  if (!sink) return fail(sink.error());
  amn::cli::ProgressBar bar(label);
  amn::ExecuteHooks hooks;
  hooks.progress = [&](uint64_t done, uint64_t total) { bar.update(done, total); };
  hooks.cancelled = [] { return g_interrupted != 0; };
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  auto st = amn::execute_plan(*plan, *local->files, **sink, hooks);
  if (st) st = (*sink)->commit();
  if (!st) return fail(st.error());
  if (!req.quiet) {
    std::printf("wrote %s (%zu tensors, %s)\n", target.c_str(), plan->tensors.size(),
                amn::human_bytes(plan->output_bytes()).c_str());
  }
  return 0;
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
  remember->add_option("-o,--output", remember_req.output, "output file (default: <stem>-<dtype>.safetensors beside the input)");
  remember->add_option("--to", remember_req.dtype, "target dtype")->check(CLI::IsMember({"bf16", "f16", "f32"}));
  remember->add_flag("--cast-all", remember_req.cast_all,
                     "quantized models: cast the unquantized tensors (norms, embeddings) to --to as well");
  remember->add_flag("--force", remember_req.force, "replace an existing output file");
  remember->add_flag("-q,--quiet", remember_req.quiet, "print nothing on success");

  ConvertRequest convert_req;
  auto* convert = app.add_subcommand("convert", "Convert a model to another format, streaming tensor by tensor");
  convert->add_option("PATH", convert_req.path, "model file, folder or *.index.json")->required();
  convert->add_option("--to", convert_req.format, "output format")->required()->check(CLI::IsMember({"safetensors", "gguf"}));
  convert->add_option("--gguf-kv", convert_req.gguf_kv, "GGUF output: set a KV, key=value or key:TYPE=value (repeatable)");
  convert->add_option("--gguf-metadata", convert_req.gguf_metadata, "GGUF output: KVs from a JSON file ({key: value} or {key: {type, value}})");
  convert->add_option("--dtype", convert_req.dtype, "cast floating tensors to this dtype (default: keep)")
      ->check(CLI::IsMember({"bf16", "f16", "f32"}));
  convert->add_option("-o,--output", convert_req.output, "output file (default: <stem>-<dtype|converted>.<format>)");
  convert->add_flag("--cast-all", convert_req.cast_all,
                    "quantized models: cast the unquantized tensors (norms, embeddings) to --dtype as well");
  convert->add_flag("--force", convert_req.force, "replace an existing output file");
  convert->add_flag("-q,--quiet", convert_req.quiet, "print nothing on success");

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

  if (*parse) return run_report(path, json, true);
  if (*inspect) return run_report(path, json, false);
  if (*remember) return run_convert(remember_req, "remember");
  if (*convert) return run_convert(convert_req, "convert");
  return 2;
}
