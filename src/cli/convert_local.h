// Converting an opened local model into local output files: where the output goes (the
// request's path or the session's default name, one file or a folder of shards, never an
// input) and the atomic write itself. Shared by the `amn` binary (src/cli/main.cpp) and
// the C++ library (src/api), so both refuse, name and write outputs the same way.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cli/local_files.h"
#include "convert/execute.h"
#include "convert/plan.h"
#include "convert/plan_forget.h"
#include "core/error.h"
#include "session/request.h"

namespace amn::cli {

struct OutputTarget {
  std::string path;     // a file, or the folder of a sharded output
  bool folder = false;  // shards + index
};

// The output of `request` for `local`: request.output, else the default name beside the
// input (session/output.h). Errors: the layout's refusals (invalid_argument, unsupported;
// options named as `surface` spells them), and invalid_argument when the target is one of
// the inputs or, for a folder, holds one (inputs are never written over, even with force).
Result<OutputTarget> output_target(const LocalModel& local, const ConvertRequest& request, Surface surface);

struct Written {
  std::string path;
  bool folder = false;
  uint64_t shards = 1;   // files written, the index not counted
  uint64_t tensors = 0;
  uint64_t bytes = 0;    // of every shard, headers included
  std::vector<std::string> files;  // a folder's files in the order written (shards, then the index)
};

// Plans the conversion and writes it to `target` atomically (cli/output_file.h,
// cli/output_folder.h): nothing is left at the target on any error. hooks.progress sees
// the bytes of the whole output (every shard); hooks.cancelled is asked between pieces
// and, for a folder, once more before it is renamed into place. Errors: the planner's, exists
// (the target exists and request.force is false), io, cancelled.
Result<Written> write_conversion(LocalModel& local, const ConvertRequest& request, const ConvertOptions& options,
                                 const OutputTarget& target, const ExecuteHooks& hooks);

// Forget: prepares the plan (encoders whose sizes wait for the values), then writes it
// to `target` atomically: a folder holds model.safetensors and, when the input has one,
// config.json with the producer's quantization_config (session/forget.h); a file target
// is the model alone. Same errors as write_conversion.
Result<Written> write_forget(LocalModel& local, const ConvertRequest& request, ForgetPlan& plan,
                             const OutputTarget& target, const ExecuteHooks& hooks);

}  // namespace amn::cli
