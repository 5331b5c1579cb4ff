// amn: the native command-line interface. The command line itself (verbs, options, help,
// usage errors) is the session's (session/command_line.h), shared with the Node CLI;
// this file does the local I/O: opening files, writing outputs, the progress bar.
#include <csignal>
#include <memory>
#include <optional>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "cli/convert_local.h"
#include "cli/local_files.h"
#include "cli/progress.h"
#include "convert/execute.h"
#include "core/limits.h"
#include "kernels/cast.h"
#include "report/lethe.h"
#include "report/report.h"
#include "report/model_diff.h"
#include "report/model_hash.h"
#include "report/value_stats.h"
#include "session/command_line.h"
#include "schemes/forget_like.h"
#include "session/forget.h"
#include "session/output.h"

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

int fail(const amn::Error& e) {
  std::fprintf(stderr, "amn: error [%s]: %s\n", std::string(amn::error_code_name(e.code)).c_str(),
               e.message.c_str());
  return 1;
}

// A misuse found once the inputs are open (a --like REF that does not fit): exit 2.
int usage(const amn::Error& e) {
  std::fputs(amn::usage_error_text(e.message).c_str(), stderr);
  return 2;
}

void print(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

int run_report(const amn::CommandLine& cmd) {
  auto local = amn::cli::open_local(cmd.open.input, cmd.open.limits);
  if (!local) return fail(local.error());
  if (cmd.json) print(amn::model_info_json(local->model));
  else print(cmd.verb == amn::Verb::parse ? amn::render_parse(local->model) : amn::render_inspect(local->model));
  return 0;
}

// stats: each tensor streamed through the core twice (report/value_stats.h); the text
// goes out tensor by tensor, the JSON once all are done.
int run_stats(const amn::CommandLine& cmd) {
  auto local = amn::cli::open_local(cmd.open.input, cmd.open.limits);
  if (!local) return fail(local.error());
  const auto names = cmd.tensors.empty() ? amn::stats_tensor_names(local->model) : cmd.tensors;
  std::vector<amn::ValueStats> all;
  for (size_t i = 0; i < names.size(); ++i) {
    auto s = amn::tensor_stats(local->model, *local->files, names[i]);
    if (!s) return fail(s.error());
    if (cmd.json) all.push_back(std::move(s).value());
    else {
      if (i) print("\n");
      print(amn::render_stats(*s));
    }
  }
  if (cmd.json) print(amn::stats_json(all) + "\n");
  return 0;
}

int run_hash(const amn::CommandLine& cmd) {
  auto local = amn::cli::open_local(cmd.open.input, cmd.open.limits);
  if (!local) return fail(local.error());
  auto h = amn::model_hash(local->model, *local->files, cmd.dequantized ? amn::HashOf::values : amn::HashOf::stored);
  if (!h) return fail(h.error());
  if (cmd.json) print(amn::hash_json(*h) + "\n");
  else print(cmd.gguf_hash ? amn::render_gguf_hash(*h, cmd.open.input) : amn::render_hash(*h));
  return 0;
}

// diff: both models open at once, each tensor read from both piece by piece
// (report/model_diff.h); exit status 0 identical, 3 different.
int run_diff(const amn::CommandLine& cmd) {
  auto a = amn::cli::open_local(cmd.open.input, cmd.open.limits);
  if (!a) return fail(a.error());
  auto b = amn::cli::open_local(cmd.other, cmd.open.limits);
  if (!b) return fail(b.error());
  auto d = amn::model_diff(a->model, *a->files, b->model, *b->files, {.map_names = !cmd.exact_names});
  if (!d) return fail(d.error());
  print(cmd.json ? amn::diff_json(*d) + "\n" : amn::render_diff(*d));
  return amn::diff_exit_status(*d);
}

// Reads a small text file (the --gguf-metadata JSON, a --tensor-type-file) whole.
amn::Result<std::string> read_text_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return amn::make_error(amn::ErrorCode::io, "cannot open " + path + ": " + std::strerror(errno));
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

// Hooks for writing an output: progress on `bar`, and Ctrl-C / SIGTERM cancel between pieces
// (the output is then removed, never left half-written).
amn::ExecuteHooks interruptible(amn::cli::ProgressBar& bar) {
  amn::ExecuteHooks hooks;
  hooks.cancelled = [] { return g_interrupted != 0; };
  hooks.progress = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  return hooks;
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
  auto target = amn::cli::output_target(*local, req, amn::Surface::cli);
  if (!target) return fail(target.error());
  amn::cli::ProgressBar bar(std::string(amn::verb_name(cmd.verb)), req.quiet);
  amn::ExecuteHooks hooks = interruptible(bar);
  hooks.threads = amn::execute_threads(req.threads);
  auto written = amn::cli::write_conversion(*local, req, *options, *target, hooks);
  if (!written) return fail(written.error());
  bar.clear();
  if (!req.quiet) print(amn::wrote_line(written->path, written->folder, written->shards, written->tensors, written->bytes));
  return 0;
}

int run_forget(const amn::CommandLine& cmd) {
  amn::ConvertRequest req = cmd.convert;
  if (!req.tensor_type_file.empty()) {
    auto text = read_text_file(req.tensor_type_file);
    if (!text) return fail(text.error());
    if (auto added = amn::add_tensor_type_file(req, *text, amn::Surface::cli); !added) return fail(added.error());
  }
  auto local = amn::cli::open_local(cmd.open.input, cmd.open.limits);
  if (!local) return fail(local.error());
  std::shared_ptr<const amn::Forgetter> like;
  std::optional<amn::cli::LocalModel> ref;  // holds REF's files open while its scales are read
  if (!req.like.empty()) {
    auto opened = amn::cli::open_local(req.like, cmd.open.limits);
    if (!opened) return fail(opened.error());
    ref.emplace(std::move(opened).value());
    auto made = amn::make_like_forgetter(ref->model, *ref->files, req.reuse_scales, req.scheme);
    if (!made) return made.error().code == amn::ErrorCode::invalid_argument ? usage(made.error()) : fail(made.error());
    like = std::shared_ptr<const amn::Forgetter>(std::move(made).value());
  }
  std::shared_ptr<const amn::ImportanceMatrix> imatrix;
  if (!req.imatrix.empty()) {
    auto file = amn::MmapSource::open(req.imatrix);
    if (!file) return fail(file.error());
    auto bytes = (*file)->read(0, 0, (*file)->size());
    if (!bytes) return fail(bytes.error());
    auto parsed = amn::parse_imatrix(*bytes, cmd.open.limits);
    if (!parsed) return fail(parsed.error());
    imatrix = std::make_shared<const amn::ImportanceMatrix>(std::move(parsed).value());
  }
  auto plan = amn::plan_forget_request(local->model, req, amn::Surface::cli, like, imatrix);
  // A --like REF that does not fit, or an --imatrix that does not fit the model: misuse.
  if (!plan && plan.error().code == amn::ErrorCode::invalid_argument && (!req.like.empty() || !req.imatrix.empty())) {
    return usage(plan.error());
  }
  if (!plan) return fail(plan.error());
  auto target = amn::cli::output_target(*local, req, amn::Surface::cli);
  if (!target) return fail(target.error());
  for (const auto& w : plan->warnings) std::fprintf(stderr, "amn: warning: %s\n", w.c_str());
  amn::cli::ProgressBar bar(std::string(amn::verb_name(cmd.verb)), req.quiet);
  amn::ExecuteHooks hooks = interruptible(bar);
  hooks.threads = amn::execute_threads(req.threads);
  auto written = amn::cli::write_forget(*local, req, *plan, *target, hooks);
  if (!written) return fail(written.error());
  bar.clear();
  if (cmd.json) {
    print(amn::lethe_json(*plan) + "\n");
  } else if (!req.quiet) {
    print(amn::wrote_line(written->path, written->folder, written->shards, written->tensors, written->bytes));
    print(amn::render_lethe(*plan));
  }
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
  if (cmd.verb == amn::Verb::forget) return run_forget(cmd);
  if (cmd.verb == amn::Verb::stats) return run_stats(cmd);
  if (cmd.verb == amn::Verb::hash) return run_hash(cmd);
  if (cmd.verb == amn::Verb::diff) return run_diff(cmd);
  return run_convert(cmd);
}
