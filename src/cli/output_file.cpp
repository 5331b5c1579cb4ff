#include "cli/output_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string_view>

namespace amn::cli {
namespace fs = std::filesystem;

namespace {

// The pid in a temporary's name (".amn-tmp-pid<pid>-..."), or 0.
pid_t pid_in_name(std::string_view name) {
  const std::string_view head = kTempPrefix;
  if (name.substr(0, head.size()) != head || name.substr(head.size(), 3) != "pid") return 0;
  pid_t pid = 0;
  size_t i = head.size() + 3;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && pid < 100'000'000; ++i) pid = pid * 10 + (name[i] - '0');
  return i < name.size() && name[i] == '-' ? pid : 0;
}

bool process_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// Links an unnamed (O_TMPFILE) file at `name`; fails with EEXIST when something is there.
int link_fd(int fd, const std::string& name) {
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  int rc = ::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW);
  // Without /proc: AT_EMPTY_PATH (which needs CAP_DAC_READ_SEARCH).
  if (rc != 0 && errno == ENOENT && ::access("/proc/self/fd", F_OK) != 0) {
    rc = ::linkat(fd, "", AT_FDCWD, name.c_str(), AT_EMPTY_PATH);
  }
  return rc;
}

}  // namespace

std::string temp_name_prefix() { return std::string(kTempPrefix) + "pid" + std::to_string(::getpid()) + "-"; }

void remove_stale_temporaries(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    const pid_t pid = pid_in_name(name);
    if (pid <= 0 || pid == ::getpid() || process_alive(pid)) continue;
    // The pid may live in another pid namespace (a container sharing the folder): its
    // owner also holds a lock on it while writing, which outlives no process.
    const std::string path = (fs::path(dir) / std::string(name)).string();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    struct stat st {};
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && ::fstat(fd, &st) == 0) {
      std::error_code ec;
      if (S_ISDIR(st.st_mode)) fs::remove_all(path, ec);
      else if (S_ISREG(st.st_mode)) ::unlink(path.c_str());
    }
    ::close(fd);
  }
  ::closedir(d);
}

Result<std::unique_ptr<OutputFile>> OutputFile::create(const std::string& target, bool overwrite, bool sync) {
  std::error_code ec;
  if (!overwrite && fs::exists(fs::symlink_status(target, ec))) {
    return make_error(ErrorCode::exists, target + " already exists (use --force to replace it)");
  }
  fs::path dir = fs::path(target).parent_path();
  if (dir.empty()) dir = ".";
  // Left by a crash: named temporaries (no O_TMPFILE here, or a --force replacement
  // killed between its link and its rename).
  remove_stale_temporaries(dir.string());
#ifdef O_TMPFILE
  // Unnamed until commit. EOPNOTSUPP / EISDIR / EINVAL: this file system or kernel has
  // no O_TMPFILE; any other failure is reported by the named fallback's own attempt.
  const int unnamed = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  if (unnamed >= 0) {
    ::fchmod(unnamed, 0644);  // whatever the umask: a model file is readable like any other
    return std::unique_ptr<OutputFile>(new OutputFile(target, dir.string(), "", unnamed, overwrite, sync));
  }
#endif
  std::string temp = (dir / (temp_name_prefix() + fs::path(target).filename().string() + "-XXXXXX")).string();
  int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) return make_error(ErrorCode::io, "cannot create a file in " + dir.string() + ": " + std::strerror(errno));
  ::flock(fd, LOCK_EX | LOCK_NB);  // held until the file has its final name: "still being written"
  ::fchmod(fd, 0644);
  return std::unique_ptr<OutputFile>(new OutputFile(target, dir.string(), temp, fd, overwrite, sync));
}

OutputFile::~OutputFile() {
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
  if (fd_ >= 0) ::close(fd_);
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

Status OutputFile::link_unnamed() {
  const auto move_error = [&] {
    return make_error(ErrorCode::io, "cannot move the output into place at " + target_ + ": " + std::strerror(errno));
  };
  if (!overwrite_) {
    // linkat fails if the target appeared meanwhile: no race can make us replace a file.
    if (link_fd(fd_, target_) == 0) return {};
    if (errno == EEXIST) return make_error(ErrorCode::exists, target_ + " already exists (use --force to replace it)");
    return move_error();
  }
  // linkat cannot replace a file: link under a temporary name, then rename over the
  // target (atomic). A crash between the two leaves a named temporary of a dead process.
  static unsigned counter = 0;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string name = (fs::path(dir_) / (temp_name_prefix() + fs::path(target_).filename().string() + "-l" +
                                                std::to_string(counter++))).string();
    if (link_fd(fd_, name) != 0) {
      if (errno == EEXIST) continue;
      return move_error();
    }
    if (::rename(name.c_str(), target_.c_str()) != 0) {
      const Error e = move_error();
      ::unlink(name.c_str());
      return e;
    }
    return {};
  }
  return move_error();
}

Status OutputFile::commit() {
  if (sync_ && ::fsync(fd_) != 0) return make_error(ErrorCode::io, "cannot flush " + target_ + ": " + std::strerror(errno));
  if (temp_.empty()) {
    AMN_TRY(link_unnamed());
  } else if (overwrite_) {
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
  ::close(fd_);  // after the rename: the lock of a named temporary is held until it has its name
  fd_ = -1;
  if (!sync_) return {};
  int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

}  // namespace amn::cli
