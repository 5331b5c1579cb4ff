#include "cli/output_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

namespace amn::cli {
namespace fs = std::filesystem;

Result<std::unique_ptr<OutputFile>> OutputFile::create(const std::string& target, bool overwrite) {
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
  return std::unique_ptr<OutputFile>(new OutputFile(target, temp, fd, overwrite));
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

Status OutputFile::commit() {
  if (::fsync(fd_) != 0) return make_error(ErrorCode::io, "cannot flush " + target_ + ": " + std::strerror(errno));
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
  fs::path dir = fs::path(target_).parent_path();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

}  // namespace amn::cli
