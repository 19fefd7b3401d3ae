// Rank placement: ordering ranks by host keeps a tensor-parallel group on one host whatever the
// launcher's mapping (parallel/comm/placement.h).
#include <doctest/doctest.h>

#include "parallel/comm/placement.h"

using namespace flextp;

TEST_CASE("ranks ordered by host: a host's ranks become consecutive, rank 0 stays first") {
  // mpirun --map-by node over 2 hosts: ranks alternate.
  CHECK(places_by_host({"a", "b", "a", "b"}) == std::vector<int>{0, 2, 1, 3});
  // Already grouped: unchanged.
  CHECK(places_by_host({"a", "a", "b", "b"}) == std::vector<int>{0, 1, 2, 3});
  // Hosts in the order of their first rank, each host's ranks in launch order.
  CHECK(places_by_host({"b", "a", "c", "a", "b", "c"}) == std::vector<int>{0, 2, 4, 3, 1, 5});
  CHECK(places_by_host({"solo"}) == std::vector<int>{0});
}

TEST_CASE("tensor-parallel groups that span hosts are named") {
  CHECK(groups_across_hosts({"a", "a", "b", "b"}, 2).empty());
  CHECK(groups_across_hosts({"a", "b", "a", "b"}, 2) ==
        std::vector<std::string>{"ranks 0-1 on a, b", "ranks 2-3 on a, b"});
  // One group of all ranks (--tp unset) across two hosts.
  CHECK(groups_across_hosts({"a", "a", "b", "b"}, 0) == std::vector<std::string>{"ranks 0-3 on a, b"});
  // Three ranks per host in groups of two: the middle group spans.
  CHECK(groups_across_hosts({"a", "a", "a", "b", "b", "b"}, 2) == std::vector<std::string>{"ranks 2-3 on a, b"});
  CHECK(groups_across_hosts({"a"}, 1).empty());
}

TEST_CASE("the links rank 0's collectives cross, in words") {
  CHECK(links_of_rank0({"a", "b"}, 0) == "tensor-parallel group's links (across a, b)");
  CHECK(links_of_rank0({"a", "a", "b", "b"}, 2) ==
        "tensor-parallel group's links (inside a) and the data-parallel sum's (across a, b)");
  CHECK(links_of_rank0({"a", "a"}, 1) == "tensor-parallel group's links (inside a) and the data-parallel sum's (inside a)");
}
