// Output safety: bytes go to a temporary file beside the target, which is linked or
// renamed into place only after the last byte is written and flushed. On any error,
// nothing is left at the target. On Linux the temporary is unnamed (O_TMPFILE): a crash,
// even `kill -9`, leaves nothing beside the target either. Where the file system has no
// O_TMPFILE it is a named `.amn-tmp-pid<pid>-<name>-XXXXXX`, locked (flock) while it is
// written; the next output written into that folder removes the ones whose process is
// gone (remove_stale_temporaries). An existing file is never replaced unless `overwrite`,
// and never when it is one of the inputs; a replacement is atomic (rename). With `sync`
// false (--no-sync, for scratch outputs) the same steps run without fsyncs: a crash of
// the machine (not of this process) may then leave the file empty or torn.
#pragma once
#include <string>
#include <vector>

#include "convert/execute.h"
#include "core/error.h"

namespace amn::cli {

// The prefix of every temporary name, and this process's: ".amn-tmp-pid<pid>-".
inline constexpr const char* kTempPrefix = ".amn-tmp-";
std::string temp_name_prefix();

// Removes, from `dir`, temporaries (files or folders) that this module named and whose
// process is gone: the pid in the name is not running and nothing holds the temporary's
// lock. Best effort; errors are ignored (another process may be cleaning up too).
void remove_stale_temporaries(const std::string& dir);

class OutputFile final : public Sink {
 public:
  static Result<std::unique_ptr<OutputFile>> create(const std::string& target, bool overwrite, bool sync = true);
  ~OutputFile() override;  // removes the temporary file unless committed
  Status write(std::span<const uint8_t> bytes) override;
  // copy_file_range(2), or pread + write through a reused buffer where the kernel refuses
  // (another filesystem on old kernels, or a file system without it).
  Result<bool> copy_range(int in_fd, uint64_t offset, uint64_t length) override;
  Status commit();         // fsync, link or rename into place, fsync the folder (no fsyncs without sync)
  const std::string& target() const { return target_; }

 private:
  // temp empty: fd is an unnamed O_TMPFILE file in `dir`.
  OutputFile(std::string target, std::string dir, std::string temp, int fd, bool overwrite, bool sync)
      : target_(std::move(target)), dir_(std::move(dir)), temp_(std::move(temp)), fd_(fd), overwrite_(overwrite),
        sync_(sync) {}
  Status link_unnamed();  // O_TMPFILE: give the file its name (or a temporary one, then rename)
  std::string target_, dir_, temp_;
  int fd_;
  bool overwrite_;
  bool sync_;
  bool committed_ = false;
  bool kernel_copy_ = true;        // false once copy_file_range said it cannot
  std::vector<uint8_t> staging_;   // the fallback's buffer, allocated on first use
};

}  // namespace amn::cli
