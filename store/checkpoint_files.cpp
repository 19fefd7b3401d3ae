#include "store/checkpoint_files.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "core/error.h"
#include "core/safetensors.h"
#include "core/temp_files.h"
#include "core/text_fields.h"

namespace flextp {
namespace {

// runs/m.safetensors -> {"runs/m", ".safetensors"}: the step tag goes between them.
std::pair<std::string, std::string> stem_and_extension(const std::string& path) {
  size_t slash = path.find_last_of('/'), dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) dot = path.size();
  return {path.substr(0, dot), path.substr(dot)};
}

constexpr size_t kMinDigits = 6, kMaxDigits = 18;  // 18 digits always fit an int64_t

// The step of a periodic checkpoint's file name, <stem>-step<digits><tail>; -1 for any other name.
int64_t periodic_step(const std::string& name, const std::string& stem, const std::string& tail) {
  const std::string head = stem + "-step";
  if (name.size() < head.size() + kMinDigits + tail.size() || name.compare(0, head.size(), head) != 0 ||
      name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
    return -1;
  std::string digits = name.substr(head.size(), name.size() - head.size() - tail.size());
  if (digits.size() > kMaxDigits || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

}  // namespace

std::string periodic_checkpoint_path(const std::string& path, int64_t step) {
  auto [stem, extension] = stem_and_extension(path);
  char tag[32];
  std::snprintf(tag, sizeof tag, "-step%06lld", (long long)step);
  return stem + tag + extension;
}

int remove_stale_checkpoint_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string name = fs::path(path).filename().string();
  auto [stem, tail] = stem_and_extension(name);
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::set<std::string> bases;  // the files whose temporaries these are
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string file = e.path().filename().string();
    size_t tmp = file.rfind(".tmp.");
    if (tmp == std::string::npos) continue;
    std::string base = file.substr(0, tmp);
    if (base.size() > 11 && base.compare(base.size() - 11, 11, ".state.next") == 0) base.resize(base.size() - 11);
    if (base == name || periodic_step(base, stem, tail) >= 0) bases.insert(file.substr(0, tmp));
  }
  int removed = 0;
  for (const std::string& base : bases) removed += remove_stale_temporaries((dir / base).string());
  return removed;
}

std::vector<std::string> periodic_checkpoints(const std::string& path) {
  namespace fs = std::filesystem;
  auto [stem, tail] = stem_and_extension(fs::path(path).filename().string());
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    int64_t step = periodic_step(e.path().filename().string(), stem, tail);
    if (step >= 0) found.push_back({step, e.path().string()});
  }
  // By step: names of seven digits and more sort before "-step999999" as text.
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto& f : found) paths.push_back(std::move(f.second));
  return paths;
}

void remove_old_checkpoints(const std::string& path, int64_t keep, const std::string& run_id, int64_t step) {
  std::vector<std::string> ours;
  for (const std::string& f : periodic_checkpoints(path)) {
    std::map<std::string, std::string> meta;
    try {
      meta = read_safetensors_metadata(f);
    } catch (const Error&) {
      continue;  // not a checkpoint flextp can read: not this run's
    }
    std::optional<int64_t> saved_step = meta.count("step") ? whole_int(meta["step"]) : std::nullopt;
    if (!run_id.empty() && meta["run_id"] == run_id && saved_step && *saved_step <= step) ours.push_back(f);
  }
  std::error_code ec;
  for (size_t i = 0; i + static_cast<size_t>(keep) < ours.size(); ++i)
    for (const std::string& f : {ours[i], ours[i] + ".state", ours[i] + ".state.next"})
      std::filesystem::remove(f, ec);
}

namespace {

// Creates and removes a file where `path` would be written: the one test of a directory that
// also holds for root (which access(2) says may write anywhere) and read-only mounts.
void probe_write(const std::string& path, const std::string& flag, const std::string& what) {
  std::string probe = temporary_path(path);
  try {
    ::close(create_new_file(probe));
  } catch (const Error& e) {
    FLEXTP_FAIL(flag, " ", what, ": cannot write there (", e.what(), "); checked before training so that the run is not lost at its end");
  }
  std::filesystem::remove(probe);
}

// The directory that holds `dir`'s files: `dir`, or where it exists not yet, the nearest directory
// above it, in which the first write makes it. Refused, naming `flag` and `what`, where a file is
// in the way.
std::string holding_directory(const std::string& dir, const std::string& flag, const std::string& what) {
  std::error_code ec;
  const std::string holder = existing_ancestor(dir);
  FLEXTP_CHECK(std::filesystem::is_directory(holder, ec), flag, " ", what, ": ", holder, " is not a directory");
  return holder;
}

}  // namespace

void check_checkpoint_path(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  FLEXTP_CHECK(!fs::is_directory(path, ec), flag, " ", path, " is a directory: give the checkpoint's file name, e.g. ",
               (fs::path(path) / "model.safetensors").string());
  for (const std::string& beside : {path + ".state", path + ".state.next"})
    FLEXTP_CHECK(!fs::is_directory(beside, ec), flag, " ", path, ": ", beside,
                 " (where its optimizer state goes) is a directory");
  const std::string dir = fs::path(path).parent_path().empty() ? "." : fs::path(path).parent_path().string();
  const std::string holder = holding_directory(dir, flag, path);
  if (holder == dir) probe_write(path, flag, path);
  else probe_write((fs::path(holder) / "flextp-save").string(), flag, path + " (its directory to be created in " + holder + ")");
}

void check_export_dir(const std::string& dir, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  FLEXTP_CHECK(!fs::exists(dir, ec) || fs::is_directory(dir, ec), flag, " ", dir, " is a file, not a directory (it writes ",
               dir, "/config.json and ", dir, "/model.safetensors)");
  const std::string holder = holding_directory(dir, flag, dir);
  if (holder == dir) probe_write((fs::path(dir) / "model.safetensors").string(), flag, dir);
  else probe_write((fs::path(holder) / "flextp-export").string(), flag, dir + " (to be created in " + holder + ")");
}

}  // namespace flextp
