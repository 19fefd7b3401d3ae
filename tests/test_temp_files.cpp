// The temporary files of atomic writes: a symlink planted where a temporary file or the target
// will be is never written through, and the temporaries of a killed process go on the next write.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "core/safetensors.h"
#include "core/temp_files.h"
#include "tests/temp_dir.h"

using namespace flextp;
namespace fs = std::filesystem;

namespace {
// The pid of a process that has exited (and been reaped): no process has it, for now.
pid_t dead_pid() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}
}  // namespace

TEST_CASE("a symlink planted at a temporary file's name or at the target is never written through") {
  test::TempDir dir("tmplink");
  const std::string victim = dir.write("victim.txt", "precious");
  const std::string path = dir.file("m.safetensors.state.next");
  // Where the temporary file of this process used to be (PATH.tmp.<pid>), and a dangling link.
  fs::create_symlink(victim, path + ".tmp." + std::to_string(::getpid()));
  fs::create_symlink(dir.file("nowhere"), dir.file("dangling"));

  CHECK_THROWS_WITH_AS(::close(create_new_file(path + ".tmp." + std::to_string(::getpid()))),
                       doctest::Contains("File exists"), Error);
  CHECK_THROWS_AS(::close(create_new_file(dir.file("dangling"))), Error);
  CHECK_FALSE(fs::exists(dir.file("nowhere")));

  write_file_atomic(path, "new state");
  CHECK(test::read_bytes(victim) == "precious");
  CHECK(test::read_bytes(path) == "new state");
  CHECK_FALSE(fs::is_symlink(path));

  // A link at the target itself is replaced, not followed.
  fs::create_symlink(victim, dir.file("m.safetensors"));
  write_file_atomic(dir.file("m.safetensors"), "weights");
  CHECK(test::read_bytes(victim) == "precious");
  CHECK_FALSE(fs::is_symlink(dir.file("m.safetensors")));
  CHECK(test::read_bytes(dir.file("m.safetensors")) == "weights");

  // Temporary names differ from call to call: another process cannot plant the next one.
  CHECK(temporary_path(path) != temporary_path(path));
  CHECK(temporary_path(path).rfind(path + ".tmp." + std::to_string(::getpid()) + ".", 0) == 0);
}

TEST_CASE("the temporary files of a dead process are removed on the next write of the file, a live one's are not") {
  test::TempDir dir("tmpstale");
  const std::string path = dir.file("m.st");
  const std::string dead = std::to_string(dead_pid());
  dir.write("m.st.tmp." + dead, "old-style name");
  dir.write("m.st.tmp." + dead + ".0123456789abcdef", "new-style name");
  dir.write("m.st.tmp.1.0123456789abcdef", "pid 1 lives");
  dir.write("other.st.tmp." + dead, "another file's");
  dir.write("m.st.tmp.x", "not a pid");
  write_file_atomic(path, "saved");
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"m.st", "m.st.tmp.1.0123456789abcdef", "m.st.tmp.x", "other.st.tmp." + dead});
}
