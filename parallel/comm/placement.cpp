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

namespace {

// The distinct hosts of `count` places from `first`, `stride` apart, in order: ("h0, h1", 2).
std::pair<std::string, size_t> hosts_of(const std::vector<std::string>& hosts, int first, int stride, int count) {
  std::vector<std::string> seen;
  for (int i = 0; i < count; ++i) {
    const std::string& h = hosts[first + i * stride];
    if (std::find(seen.begin(), seen.end(), h) == seen.end()) seen.push_back(h);
  }
  std::string names;
  for (size_t i = 0; i < seen.size(); ++i) names += (i ? ", " : "") + seen[i];
  return {names, seen.size()};
}

}  // namespace

std::vector<std::string> groups_across_hosts(const std::vector<std::string>& hosts, int tp) {
  int n = static_cast<int>(hosts.size());
  if (tp <= 0 || tp > n) tp = n;
  std::vector<std::string> lines;
  for (int first = 0; first + tp <= n; first += tp) {
    auto [names, count] = hosts_of(hosts, first, 1, tp);
    if (count > 1)
      lines.push_back("ranks " + std::to_string(first) + "-" + std::to_string(first + tp - 1) + " on " + names);
  }
  return lines;
}

std::string links_of_rank0(const std::vector<std::string>& hosts, int tp) {
  int n = static_cast<int>(hosts.size());
  if (tp <= 0 || tp > n) tp = n;
  auto where = [&](int stride, int count) {
    auto [names, distinct] = hosts_of(hosts, 0, stride, count);
    return (distinct > 1 ? "across " : "inside ") + names;
  };
  std::string links = "tensor-parallel group's links (" + where(1, tp) + ")";
  if (n / tp > 1) links += " and the data-parallel sum's (" + where(tp, n / tp) + ")";
  return links;
}

}  // namespace flextp
