// A sharded output as one atomic unit: the shards and the index are written into a
// temporary folder beside the target, `.amn-tmp-pid<pid>-<name>-XXXXXX/` (each through
// an OutputFile, so each is fsynced); a crash leaves that folder, and the next output
// written beside it removes it once its process is gone (remove_stale_temporaries),
// and the folder is renamed into place only after the last file is in it. On any
// error, or if the process is interrupted, nothing is left at the target. An existing
// target is replaced only with `overwrite`, and never when it holds one of the inputs
// (the caller checks that: it knows the inputs). With `sync` false (--no-sync) every step
// is the same but no file or folder is fsynced.
#pragma once
#include <memory>
#include <string>

#include "cli/output_file.h"
#include "core/error.h"

namespace amn::cli {

class OutputFolder {
 public:
  static Result<std::unique_ptr<OutputFolder>> create(const std::string& target, bool overwrite, bool sync = true);
  ~OutputFolder();  // removes the temporary folder and what is in it unless committed
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  // A file of the output, by name (no folders). Commit it before committing the folder.
  Result<std::unique_ptr<OutputFile>> open(const std::string& name);
  // fsync the temporary folder, rename it into place (atomically replacing an existing
  // target with `overwrite`), fsync the parent folder, then remove what it replaced.
  // Without sync: the same renames, no fsyncs.
  Status commit();
  const std::string& target() const { return target_; }

 private:
  OutputFolder(std::string target, std::string temp, int lock_fd, bool overwrite, bool sync)
      : target_(std::move(target)), temp_(std::move(temp)), lock_fd_(lock_fd), overwrite_(overwrite), sync_(sync) {}
  void sync_folder(const std::string& dir) const;
  std::string target_, temp_;
  int lock_fd_;  // the temporary folder, flock'ed: "still being written" (remove_stale_temporaries)
  bool overwrite_;
  bool sync_;
  bool committed_ = false;
};

}  // namespace amn::cli
