#include "core/temp_files.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/error.h"

namespace flextp {

std::string random_hex_id() {
  std::random_device device;
  uint64_t id = (static_cast<uint64_t>(device()) << 32) ^ device();
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", (unsigned long long)id);
  return text;
}

std::string temporary_path(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid()) + "." + random_hex_id();
}

int create_new_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  FLEXTP_CHECK(fd >= 0, "cannot create ", path, ": ", std::strerror(errno),
               errno == EEXIST ? " (something is already there: a planted file or symlink is never written through)" : "");
  return fd;
}

int remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string head = target.filename().string() + ".tmp.";
  int removed = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.compare(0, head.size(), head) != 0) continue;
    std::string rest = name.substr(head.size());  // <pid> or <pid>.<suffix>
    std::string pid_text = rest.substr(0, rest.find('.'));
    if (pid_text.empty() || pid_text.size() > 9 || pid_text.find_first_not_of("0123456789") != std::string::npos)
      continue;
    pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    // Only a process that does not exist: one of another user answers EPERM and is alive.
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code gone;
    if (fs::remove(e.path(), gone)) ++removed;
  }
  return removed;
}

std::string existing_ancestor(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p = dir.empty() ? "." : dir;
  while (!p.empty() && !std::filesystem::exists(p, ec)) p = p.parent_path();
  return p.empty() ? "." : p.string();
}

void make_directories(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (dir.empty() || fs::is_directory(dir, ec)) return;
  const std::string above = existing_ancestor(dir);
  FLEXTP_CHECK(fs::is_directory(above, ec), "cannot create directory ", dir, ": ", above, " is not a directory");
  fs::create_directories(dir, ec);
  FLEXTP_CHECK(!ec, "cannot create directory ", dir, ": ", ec.message());
}

}  // namespace flextp
