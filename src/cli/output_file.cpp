#include "cli/output_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

namespace amn::cli {
namespace fs = std::filesystem;

Result<std::unique_ptr<OutputFile>> OutputFile::create(const std::string& target, bool overwrite, bool sync) {
  std::error_code ec;
  if (!overwrite && fs::exists(fs::symlink_status(target, ec))) {
    return make_error(ErrorCode::exists, target + " already exists (use --force to replace it)");
  }
  fs::path dir = fs::path(target).parent_path();
  if (dir.empty()) dir = ".";
  std::string temp = (dir / (".amn-tmp-" + fs::path(target).filename().string() + "-XXXXXX")).string();
  int fd = ::mkstemp(temp.data());
  if (fd < 0) return make_error(ErrorCode::io, "cannot create a file in " + dir.string() + ": " + std::strerror(errno));
  ::fchmod(fd, 0644);
  return std::unique_ptr<OutputFile>(new OutputFile(target, temp, fd, overwrite, sync));
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

Status OutputFile::write(std::span<const uint8_t> bytes) {
  const uint8_t* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorCode::io, "cannot write " + target_ + ": " + std::strerror(errno));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return {};
}

Result<bool> OutputFile::copy_range(int in_fd, uint64_t offset, uint64_t length) {
  uint64_t done = 0;
  while (kernel_copy_ && done < length) {
    loff_t at = static_cast<loff_t>(offset + done);
    const ssize_t n = ::copy_file_range(in_fd, &at, fd_, nullptr, static_cast<size_t>(length - done), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      // Not for this pair of files (EXDEV, EINVAL, EOPNOTSUPP) or not in this kernel (ENOSYS):
      // the rest goes through the buffer, and so does every later piece.
      if (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP) {
        kernel_copy_ = false;
        break;
      }
      return make_error(ErrorCode::io, "cannot write " + target_ + ": " + std::strerror(errno));
    }
    if (n == 0) return make_error(ErrorCode::io, "the input file became shorter while it was read", offset + done);
    done += static_cast<uint64_t>(n);
  }
  if (done < length && staging_.empty()) staging_.resize(size_t{1} << 20);
  while (done < length) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(length - done, staging_.size()));
    const ssize_t n = ::pread(in_fd, staging_.data(), want, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error(ErrorCode::io, std::string("cannot read the input: ") + std::strerror(errno));
    if (n == 0) return make_error(ErrorCode::io, "the input file became shorter while it was read", offset + done);
    AMN_TRY(write(std::span<const uint8_t>(staging_.data(), static_cast<size_t>(n))));
    done += static_cast<uint64_t>(n);
  }
  return true;
}

Status OutputFile::commit() {
  if (sync_ && ::fsync(fd_) != 0) return make_error(ErrorCode::io, "cannot flush " + target_ + ": " + std::strerror(errno));
  ::close(fd_);
  fd_ = -1;
  if (overwrite_) {
    if (::rename(temp_.c_str(), target_.c_str()) != 0) {
      return make_error(ErrorCode::io, "cannot move the output into place at " + target_ + ": " + std::strerror(errno));
    }
  } else {
    // link() fails if the target appeared meanwhile: no race can make us replace a file.
    if (::link(temp_.c_str(), target_.c_str()) != 0) {
      if (errno == EEXIST) return make_error(ErrorCode::exists, target_ + " already exists (use --force to replace it)");
      return make_error(ErrorCode::io, "cannot move the output into place at " + target_ + ": " + std::strerror(errno));
    }
    ::unlink(temp_.c_str());
  }
  committed_ = true;
  if (!sync_) return {};
  fs::path dir = fs::path(target_).parent_path();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

}  // namespace amn::cli
