// Output safety: bytes go to a temporary file beside the target, which is renamed into
// place only after the last byte is written and flushed. On any error, or if the process
// is interrupted, nothing is left at the target. An existing file is never replaced
// unless `overwrite`, and never when it is one of the inputs. With `sync` false (--no-sync,
// for scratch outputs) the file is still written under a temporary name and renamed into
// place, but neither it nor its folder is fsynced: a crash of the machine (not of this
// process) may then leave it empty or torn.
#pragma once
#include <string>
#include <vector>

#include "convert/execute.h"
#include "core/error.h"

namespace amn::cli {

class OutputFile final : public Sink {
 public:
  static Result<std::unique_ptr<OutputFile>> create(const std::string& target, bool overwrite, bool sync = true);
  ~OutputFile() override;  // removes the temporary file unless committed
  Status write(std::span<const uint8_t> bytes) override;
  // copy_file_range(2), or pread + write through a reused buffer where the kernel refuses
  // (another filesystem on old kernels, or a file system without it).
  Result<bool> copy_range(int in_fd, uint64_t offset, uint64_t length) override;
  Status commit();         // fsync, rename into place, fsync the folder (no fsyncs without sync)
  const std::string& target() const { return target_; }

 private:
  OutputFile(std::string target, std::string temp, int fd, bool overwrite, bool sync)
      : target_(std::move(target)), temp_(std::move(temp)), fd_(fd), overwrite_(overwrite), sync_(sync) {}
  std::string target_, temp_;
  int fd_;
  bool overwrite_;
  bool sync_;
  bool committed_ = false;
  bool kernel_copy_ = true;        // false once copy_file_range said it cannot
  std::vector<uint8_t> staging_;   // the fallback's buffer, allocated on first use
};

}  // namespace amn::cli
