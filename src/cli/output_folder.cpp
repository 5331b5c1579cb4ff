#include "cli/output_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace amn::cli {
namespace fs = std::filesystem;

namespace {

fs::path parent_of(const std::string& target) {
  // "out/" names the folder "out": drop the trailing separator before taking the parent.
  fs::path p = fs::path(target);
  if (!p.has_filename()) p = p.parent_path();
  fs::path dir = p.parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

std::string name_of(const std::string& target) {
  fs::path p = fs::path(target);
  if (!p.has_filename()) p = p.parent_path();
  return p.filename().string();
}

}  // namespace

void OutputFolder::sync_folder(const std::string& dir) const {
  if (!sync_) return;
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

Result<std::unique_ptr<OutputFolder>> OutputFolder::create(const std::string& target, bool overwrite, bool sync) {
  std::error_code ec;
  if (!overwrite && fs::exists(fs::symlink_status(target, ec))) {
    return make_error(ErrorCode::exists, target + " already exists (use --force to replace it)");
  }
  const fs::path dir = parent_of(target);
  // A folder cannot be unnamed (O_TMPFILE): a crash leaves it, named with our pid and
  // locked while we live, and the next output written here removes it.
  remove_stale_temporaries(dir.string());
  std::string temp = (dir / (temp_name_prefix() + name_of(target) + "-XXXXXX")).string();
  if (::mkdtemp(temp.data()) == nullptr) {
    return make_error(ErrorCode::io, "cannot create a folder in " + dir.string() + ": " + std::strerror(errno));
  }
  const int lock = ::open(temp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock >= 0) ::flock(lock, LOCK_EX | LOCK_NB);
  ::chmod(temp.c_str(), 0755);  // mkdtemp makes it 0700; a model folder is readable like a file
  return std::unique_ptr<OutputFolder>(new OutputFolder(target, temp, lock, overwrite, sync));
}

OutputFolder::~OutputFolder() {
  std::error_code ec;
  if (!committed_) fs::remove_all(temp_, ec);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Result<std::unique_ptr<OutputFile>> OutputFolder::open(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
    return make_error(ErrorCode::internal, "'" + name + "' is not a file name");
  }
  // Never replaces anything: the temporary folder is ours and starts empty.
  return OutputFile::create((fs::path(temp_) / name).string(), false, sync_);
}

Status OutputFolder::commit() {
  sync_folder(temp_);
  const std::string dest = (parent_of(target_) / name_of(target_)).string();
  const auto move_error = [&] {
    return make_error(ErrorCode::io, "cannot move the output into place at " + target_ + ": " + std::strerror(errno));
  };
  std::error_code ec;
  const bool present = fs::exists(fs::symlink_status(dest, ec));
  if (!present) {
    // RENAME_NOREPLACE: a folder (even an empty one) that appeared meanwhile is not replaced.
    int rc = ::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, dest.c_str(), RENAME_NOREPLACE);
    // A file system without renameat2 flags: plain rename after the check above.
    if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) rc = ::rename(temp_.c_str(), dest.c_str());
    if (rc != 0) {
      if (errno == EEXIST || errno == ENOTEMPTY) return make_error(ErrorCode::exists, target_ + " already exists (use --force to replace it)");
      return move_error();
    }
  } else if (!overwrite_) {
    return make_error(ErrorCode::exists, target_ + " already exists (use --force to replace it)");
  } else {
    // Swap the finished folder and the old one in one step, so the target always names
    // a whole model; the old one, now at the temporary name, is removed afterwards.
    if (::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, dest.c_str(), RENAME_EXCHANGE) != 0) {
      if (errno != EINVAL && errno != ENOSYS) return move_error();
      // No exchange here: move the old one aside first (a short window with no target).
      const std::string aside = temp_ + "-old";
      if (::rename(dest.c_str(), aside.c_str()) != 0) return move_error();
      if (::rename(temp_.c_str(), dest.c_str()) != 0) {
        ::rename(aside.c_str(), dest.c_str());
        return move_error();
      }
      committed_ = true;
      sync_folder(parent_of(target_).string());
      fs::remove_all(aside, ec);
      return {};
    }
    committed_ = true;
    sync_folder(parent_of(target_).string());
    fs::remove_all(temp_, ec);
    return {};
  }
  committed_ = true;
  sync_folder(parent_of(target_).string());
  return {};
}

}  // namespace amn::cli
