#include "parallel/comm/host_files.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "core/safetensors.h"
#include "core/temp_files.h"

namespace flextp {
std::vector<std::vector<int>> ranks_by_host(const std::vector<std::string>& hosts, int ranks) {
  std::vector<std::string> order;
  std::vector<std::vector<int>> by;
  for (int r = 0; r < ranks; ++r) {
    const std::string h = r < static_cast<int>(hosts.size()) ? hosts[r] : "";
    size_t i = 0;
    while (i < order.size() && order[i] != h) ++i;
    if (i == order.size()) order.push_back(h), by.emplace_back();
    by[i].push_back(r);
  }
  return by;
}

std::vector<int> host_leads(const std::vector<std::string>& hosts, int ranks) {
  std::vector<int> leads;
  for (const std::vector<int>& on : ranks_by_host(hosts, ranks)) leads.push_back(on[0]);
  return leads;
}

void copy_files(ByteMail* mail, const std::vector<FileCopy>& copies) {
  if (!mail) return;
  std::map<std::string, std::shared_ptr<const std::string>> read;  // once, whatever the ranks it goes to
  for (size_t i = 0; i < copies.size(); ++i) {  // labelled by their place in the list
    const FileCopy& c = copies[i];
    if (mail->rank() == c.from) {
      std::shared_ptr<const std::string>& bytes = read[c.path];
      if (!bytes) bytes = std::make_shared<const std::string>(read_file_bytes(c.path));
      mail->send(c.to, static_cast<int>(i), bytes);
    }
    if (mail->rank() == c.to) mail->expect(c.from, static_cast<int>(i));
  }
  std::vector<ByteMail::Letter> letters = mail->finish();
  std::sort(letters.begin(), letters.end(), [](const auto& a, const auto& b) { return a.label < b.label; });
  for (const ByteMail::Letter& l : letters) {
    make_directories(std::filesystem::path(copies[l.label].path).parent_path().string());
    write_file_atomic(copies[l.label].path, l.bytes);
  }
}

}  // namespace flextp
