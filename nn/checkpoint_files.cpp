#include "nn/checkpoint_files.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <utility>

namespace flextp {
namespace {

// runs/m.safetensors -> {"runs/m", ".safetensors"}: the step tag goes between them.
std::pair<std::string, std::string> stem_and_extension(const std::string& path) {
  size_t slash = path.find_last_of('/'), dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) dot = path.size();
  return {path.substr(0, dot), path.substr(dot)};
}

constexpr size_t kMinDigits = 6, kMaxDigits = 18;  // 18 digits always fit an int64_t

}  // namespace

std::string periodic_checkpoint_path(const std::string& path, int64_t step) {
  auto [stem, extension] = stem_and_extension(path);
  char tag[32];
  std::snprintf(tag, sizeof tag, "-step%06lld", (long long)step);
  return stem + tag + extension;
}

std::vector<std::string> periodic_checkpoints(const std::string& path) {
  namespace fs = std::filesystem;
  auto [stem, tail] = stem_and_extension(path);
  const std::string head = fs::path(stem).filename().string() + "-step";
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.size() < head.size() + kMinDigits + tail.size() || name.compare(0, head.size(), head) != 0 ||
        name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
      continue;
    std::string digits = name.substr(head.size(), name.size() - head.size() - tail.size());
    if (digits.size() > kMaxDigits || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    found.push_back({std::stoll(digits), e.path().string()});
  }
  // By step: names of seven digits and more sort before "-step999999" as text.
  std::sort(found.begin(), found.end());
  std::vector<std::string> paths;
  for (auto& f : found) paths.push_back(std::move(f.second));
  return paths;
}

void remove_old_checkpoints(const std::string& path, int64_t keep) {
  std::vector<std::string> found = periodic_checkpoints(path);
  std::error_code ec;
  for (size_t i = 0; i + static_cast<size_t>(keep) < found.size(); ++i)
    for (const std::string& f : {found[i], found[i] + ".state", found[i] + ".state.next"})
      std::filesystem::remove(f, ec);
}

}  // namespace flextp
