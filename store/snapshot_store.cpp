#include "store/snapshot_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "core/error.h"
#include "core/safetensors.h"
#include "core/text_fields.h"

namespace flextp {
namespace {

namespace fs = std::filesystem;
constexpr char kWhole[] = "whole.st";
constexpr char kLock[] = "lock", kRun[] = "run";

// "step000020-1a2b3c4d" (six digits or more, eight hex digits) -> 20; none for any other name, so
// that no other file of the directory is taken for (or pruned as) a snapshot.
std::optional<int64_t> snapshot_step(const std::string& name) {
  size_t dash = name.find('-');
  if (name.rfind("step", 0) != 0 || dash == std::string::npos || dash < 10 || name.size() != dash + 9 ||
      name.find_first_not_of("0123456789abcdef", dash + 1) != std::string::npos)
    return std::nullopt;
  return whole_int(name.substr(4, dash - 4));
}

// "replica1of2-rank0of2.shard" -> its place; none for any other name.
std::optional<ShardPlace> shard_place(const std::string& file) {
  int d = 0, dn = 0, t = 0, tn = 0, used = 0;
  if (std::sscanf(file.c_str(), "replica%dof%d-rank%dof%d.shard%n", &d, &dn, &t, &tn, &used) != 4 ||
      used != static_cast<int>(file.size()))
    return std::nullopt;
  ShardPlace p{t, tn, d, dn};
  if (p.rank < 0 || p.rank >= p.ranks || p.replica < 0 || p.replica >= p.replicas || shard_name(p) != file)
    return std::nullopt;
  return p;
}

}  // namespace

std::string snapshot_name(int64_t step, const std::string& attempt) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "step%06lld-", (long long)step);
  return digits + attempt;
}

std::string shard_name(const ShardPlace& p) {
  return "replica" + std::to_string(p.replica) + "of" + std::to_string(p.replicas) + "-rank" + std::to_string(p.rank) +
         "of" + std::to_string(p.ranks) + ".shard";
}

std::string whole_checkpoint_file(const std::string& name) { return name + "/" + kWhole; }

std::vector<std::string> snapshot_files(const std::string& dir, std::vector<std::string>* rejected) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  const std::string run = snapshot_run(dir);
  auto reject = [&](const std::string& file, const std::string& why) {
    if (rejected) rejected->push_back(file + ": " + why);
  };
  auto of_run = [&](const std::string& file, const std::string& id) {
    if (run.empty() || id == run) return true;
    reject(file, "of run " + id + ", not of run " + run + " whose snapshots the directory holds");
    return false;
  };
  for (const fs::directory_entry& d : fs::directory_iterator(dir, ec)) {
    const std::string name = d.path().filename().string();
    std::optional<int64_t> step = snapshot_step(name);
    if (!step || !d.is_directory(ec)) continue;
    for (const fs::directory_entry& f : fs::directory_iterator(d.path(), ec)) {
      const std::string file = f.path().filename().string(), path = f.path().string();
      try {
        if (std::optional<ShardPlace> place = shard_place(file)) {
          ShardInfo info = read_shard_info(path);  // the whole file, against its checksum
          if (info.step == *step && info.place == *place && of_run(name + "/" + file, info.run_id))
            files.push_back(name + "/" + file);
        } else if (file == kWhole) {
          std::map<std::string, std::string> w = read_safetensors_metadata(path),
                                             s = read_safetensors_metadata(path + ".state");
          if (w["step"] == std::to_string(*step) && s["step"] == w["step"] && s["save_id"] == w["save_id"] &&
              of_run(name + "/" + file, w["run_id"]))
            files.push_back(name + "/" + file);
        }
      } catch (const std::exception& e) {  // unreadable or changed: not part of any complete snapshot
        std::string why = e.what();
        if (why.rfind(path + ": ", 0) == 0) why = why.substr(path.size() + 2);
        reject(name + "/" + file, why);
      }
    }
  }
  std::sort(files.begin(), files.end());
  if (rejected) std::sort(rejected->begin(), rejected->end());
  return files;
}

std::optional<SnapshotChoice> newest_complete_snapshot(const std::vector<std::vector<std::string>>& held) {
  struct Seen {
    bool whole = false;
    std::map<std::pair<int, int>, std::map<int, std::set<int>>> shards;  // (replicas, ranks) -> replica -> ranks held
  };
  std::map<std::string, Seen> seen;
  for (const std::vector<std::string>& files : held)
    for (const std::string& f : files) {
      size_t slash = f.find('/');
      if (slash == std::string::npos || !snapshot_step(f.substr(0, slash))) continue;
      Seen& s = seen[f.substr(0, slash)];
      std::string file = f.substr(slash + 1);
      if (file == kWhole) s.whole = true;
      if (std::optional<ShardPlace> p = shard_place(file)) s.shards[{p->replicas, p->ranks}][p->replica].insert(p->rank);
    }
  std::optional<SnapshotChoice> best;
  for (const auto& [name, s] : seen) {
    SnapshotChoice c{name, *snapshot_step(name), {}, s.whole};
    if (s.whole) {
      c.files = {whole_checkpoint_file(name)};
    } else {
      // One replica whose every tensor-parallel rank's shard is held (replicas hold the same values).
      for (const auto& [shape, replicas] : s.shards)
        for (const auto& [replica, ranks] : replicas)
          if (c.files.empty() && static_cast<int>(ranks.size()) == shape.second)
            for (int r = 0; r < shape.second; ++r)
              c.files.push_back(name + "/" + shard_name({r, shape.second, replica, shape.first}));
      if (c.files.empty()) continue;  // a shard is missing: cut off, or on a lost host
    }
    if (!best || c.step > best->step || (c.step == best->step && c.whole && !best->whole)) best = c;
  }
  return best;
}

void remove_snapshots_before(const std::string& dir, int64_t step) {
  std::error_code ec;
  for (const fs::directory_entry& d : fs::directory_iterator(dir, ec)) {
    std::optional<int64_t> s = snapshot_step(d.path().filename().string());
    if (s && *s < step) fs::remove_all(d.path(), ec);
  }
}

void hold_snapshot_directory(const std::string& dir) {
  static std::map<std::string, int> held;  // for the life of the process
  const std::string path = (fs::path(dir) / kLock).string();
  if (held.count(path)) return;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  FLEXTP_CHECK(fd >= 0, "cannot open ", path, ": ", std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    std::string holder = read_file_bytes(path);
    ::close(fd);
    while (!holder.empty() && holder.back() == '\n') holder.pop_back();
    FLEXTP_FAIL("the directory is in use by another run (", holder.empty() ? "a process" : holder,
                "): two runs must not write their snapshots into one directory; give another, or wait for it to end");
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string me = "pid " + std::to_string(::getpid()) + " on " + host + "\n";
  // The holder's name, for another run's message only: a failed write changes nothing else.
  if (::ftruncate(fd, 0) == 0) (void)!::pwrite(fd, me.data(), me.size(), 0);
  held[path] = fd;
}

std::string snapshot_run(const std::string& dir) {
  std::error_code ec;
  const fs::path path = fs::path(dir) / kRun;
  if (!fs::exists(path, ec)) return "";
  std::string id = read_file_bytes(path.string());
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

void set_snapshot_run(const std::string& dir, const std::string& run_id) {
  if (snapshot_run(dir) != run_id) write_file_atomic((fs::path(dir) / kRun).string(), run_id + "\n", false);
}

}  // namespace flextp
