#include "parallel/comm/placement.h"

#include <algorithm>
#include <map>

namespace flextp {

std::vector<int> places_by_host(const std::vector<std::string>& host_of) {
  std::map<std::string, int> first_rank;  // a host's order: its first world rank
  for (int w = 0; w < static_cast<int>(host_of.size()); ++w) first_rank.emplace(host_of[w], w);
  std::vector<int> order(host_of.size());  // world ranks in placed order
  for (int w = 0; w < static_cast<int>(order.size()); ++w) order[w] = w;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return first_rank.at(host_of[a]) < first_rank.at(host_of[b]); });
  std::vector<int> place(host_of.size());
  for (int p = 0; p < static_cast<int>(order.size()); ++p) place[order[p]] = p;
  return place;
}

std::vector<std::string> groups_across_hosts(const std::vector<std::string>& hosts, int tp) {
  int n = static_cast<int>(hosts.size());
  if (tp <= 0 || tp > n) tp = n;
  std::vector<std::string> lines;
  for (int first = 0; first + tp <= n; first += tp) {
    std::vector<std::string> seen;
    for (int p = first; p < first + tp; ++p)
      if (std::find(seen.begin(), seen.end(), hosts[p]) == seen.end()) seen.push_back(hosts[p]);
    if (seen.size() < 2) continue;
    std::string line = "ranks " + std::to_string(first) + "-" + std::to_string(first + tp - 1) + " on ";
    for (size_t i = 0; i < seen.size(); ++i) line += (i ? ", " : "") + seen[i];
    lines.push_back(line);
  }
  return lines;
}

std::string links_of_rank0(const std::vector<std::string>& hosts, int tp) {
  int n = static_cast<int>(hosts.size());
  if (tp <= 0 || tp > n) tp = n;
  auto hosts_of = [&](int first, int stride, int count) {
    std::vector<std::string> seen;
    for (int i = 0; i < count; ++i) {
      const std::string& h = hosts[first + i * stride];
      if (std::find(seen.begin(), seen.end(), h) == seen.end()) seen.push_back(h);
    }
    std::string out;
    for (size_t i = 0; i < seen.size(); ++i) out += (i ? ", " : "") + seen[i];
    return seen.size() > 1 ? "across " + out : "inside " + out;
  };
  std::string links = "tensor-parallel group's links (" + hosts_of(0, 1, tp) + ")";
  if (n / tp > 1) links += " and the data-parallel sum's (" + hosts_of(0, tp, n / tp) + ")";
  return links;
}

}  // namespace flextp
