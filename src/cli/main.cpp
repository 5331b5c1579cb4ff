// amn: the native command-line interface. The command line itself (verbs, options, help,
// usage errors) is the session's (session/command_line.h), shared with the Node CLI;
// this file does the local I/O: opening files, writing outputs, the progress bar.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include "cli/local_files.h"
#include "cli/output_file.h"
#include "cli/output_folder.h"
#include "cli/progress.h"
#include "convert/execute.h"
#include "convert/plan.h"
#include "convert/shard.h"
#include "core/limits.h"
#include "kernels/cast.h"
#include "report/report.h"
#include "session/command_line.h"
#include "session/output.h"

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

int fail(const amn::Error& e) {
  std::fprintf(stderr, "amn: error [%s]: %s\n", std::string(amn::error_code_name(e.code)).c_str(),
               e.message.c_str());
  return 1;
}

void print(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

int run_report(const amn::CommandLine& cmd) {
  auto local = amn::cli::open_local(cmd.open.input, cmd.open.limits);
  if (!local) return fail(local.error());
  if (cmd.json) print(amn::model_info_json(local->model));
  else print(cmd.verb == amn::Verb::parse ? amn::render_parse(local->model) : amn::render_inspect(local->model));
  return 0;
}

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

// Never write over one of the inputs, even with --force: inputs are read-only. A folder
// target must not hold one either (replacing it would delete it).
amn::Status check_not_an_input(const amn::cli::LocalModel& local, const std::string& target, bool folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dest = fs::weakly_canonical(fs::absolute(target, ec), ec);
  if (!dest.has_filename()) dest = dest.parent_path();  // "out/" is the folder "out"
  for (size_t i = 0; i < local.files->count(); ++i) {
    auto input = fs::path(local.folder) / local.files->name(i);
    if (fs::equivalent(input, target, ec)) return amn::output_is_input(target);
    if (!folder) continue;
    const fs::path in = fs::weakly_canonical(fs::absolute(input, ec), ec);
    auto [d, _] = std::mismatch(dest.begin(), dest.end(), in.begin(), in.end());
    if (d == dest.end()) return amn::output_holds_input(target, local.files->name(i));
  }
  return {};
}

// Shards and index into a temporary folder, renamed into place when all are written.
int write_folder(amn::cli::LocalModel& local, const amn::ConvertRequest& req, const amn::ConvertOptions& options,
                 const std::string& target, amn::cli::ProgressBar& bar, amn::ExecuteHooks hooks) {
  auto plan = amn::plan_shards(local.model, options, amn::shard_options(req));
  if (!plan) return fail(plan.error());
  auto folder = amn::cli::OutputFolder::create(target, req.force, req.sync);
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
  bar.clear();
  if (!req.quiet) print(amn::wrote_line(target, true, plan->shards.size(), tensors, plan->output_bytes()));
  return 0;
}

int run_convert(const amn::CommandLine& cmd) {
  amn::ConvertRequest req = cmd.convert;
  if (!req.gguf_metadata_file.empty()) {
    auto text = read_text_file(req.gguf_metadata_file);
    if (!text) return fail(text.error());
    req.gguf_metadata = std::move(text).value();
  }
  auto options = amn::convert_options(req);
  if (!options) return fail(options.error());
  auto local = amn::cli::open_local(cmd.open.input, cmd.open.limits);
  if (!local) return fail(local.error());
  auto layout = amn::output_layout(req, local->model.sharded, amn::Destination::path, amn::Surface::cli);
  if (!layout) return fail(layout.error());
  const std::string target = req.output.empty() ? amn::default_output(req, local->place, layout->folder) : req.output;
  if (auto st = check_not_an_input(*local, target, layout->folder); !st) return fail(st.error());
  amn::cli::ProgressBar bar(std::string(amn::verb_name(cmd.verb)), req.quiet);
  amn::ExecuteHooks hooks;
  hooks.cancelled = [] { return g_interrupted != 0; };
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  if (layout->folder) return write_folder(*local, req, *options, target, bar, hooks);
  auto plan = amn::plan_convert(local->model, *options);
  if (!plan) return fail(plan.error());
  auto sink = amn::cli::OutputFile::create(target, req.force, req.sync);
  if (!sink) return fail(sink.error());
  hooks.progress = [&](uint64_t done, uint64_t total) { bar.update(done, total); };
  auto st = amn::execute_plan(*plan, *local->files, **sink, hooks);
  if (st) st = (*sink)->commit();
  if (!st) return fail(st.error());
  bar.clear();
  if (!req.quiet) print(amn::wrote_line(target, false, 1, plan->tensors.size(), plan->output_bytes()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const amn::CommandLine cmd = amn::parse_command_line(std::vector<std::string>(argv + 1, argv + argc));
  switch (cmd.kind) {
    case amn::CommandLine::Kind::help: print(cmd.text); return 0;
    case amn::CommandLine::Kind::version: print(amn::version_text(amn::active_impl_name())); return 0;
    case amn::CommandLine::Kind::usage_error: std::fputs(amn::usage_error_text(cmd.text).c_str(), stderr); return 2;
    case amn::CommandLine::Kind::error: return fail(cmd.error);
    case amn::CommandLine::Kind::run: break;
  }
  if (auto forced = amn::check_forced_impl(); !forced) return fail(forced.error());  // AMN_FORCE_IMPL typo
  if (cmd.verb == amn::Verb::parse || cmd.verb == amn::Verb::inspect) return run_report(cmd);
  return run_convert(cmd);
}
