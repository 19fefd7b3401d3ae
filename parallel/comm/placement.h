#pragma once
// Where the ranks run, and the order of ranks that keeps a tensor-parallel group on one host.
// Tensor parallelism all-reduces several times per layer and needs the fastest link there is;
// data parallelism sums gradients once per step and can cross a network. A launcher's mapping
// (mpirun --map-by node, a hostfile's order) need not put a group's consecutive ranks on one
// host: ordering the ranks by host first does, whatever the mapping.
#include <string>
#include <vector>

namespace flextp {

// The place of each world rank when ranks are ordered by host: hosts in the order of their first
// world rank, a host's ranks in world-rank order (so world rank 0 keeps place 0). `host_of[w]`
// names world rank w's host.
std::vector<int> places_by_host(const std::vector<std::string>& host_of);

// The tensor-parallel groups of `tp` consecutive places (0: one group of all) that span several
// hosts, one line each ("ranks 2-3 on h0, h1"); `hosts[p]` is the host of place p. Empty when
// every group sits on one host.
std::vector<std::string> groups_across_hosts(const std::vector<std::string>& hosts, int tp);

// The links rank 0's collectives cross, in words: its tensor-parallel group's hosts and, with
// several replicas, its data-parallel group's ("tensor-parallel group on h0, h1").
std::string links_of_rank0(const std::vector<std::string>& hosts, int tp);

}  // namespace flextp
