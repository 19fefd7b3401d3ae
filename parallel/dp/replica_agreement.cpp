#include "parallel/dp/replica_agreement.h"

#include <map>

#include "core/autograd.h"
#include "core/error.h"
#include "parallel/comm/rank_agreement.h"

namespace flextp {

namespace {

// A tensor's rows [first, first + rows) hashed onto `hash` (copied to the host when elsewhere).
uint64_t hash_rows(const Tensor& host, int64_t first, int64_t rows, uint64_t hash) {
  int64_t row_bytes = host.size(0) ? static_cast<int64_t>(host.nbytes()) / host.size(0) : 0;
  return fingerprint(static_cast<const char*>(host.raw()) + first * row_bytes, rows * row_bytes, hash);
}

// What the replicas compare: one entry per unit of every group and per replicated parameter and tensor rank (every
// tensor rank keeps its own copy of a replicated parameter), in each replica's block: a 52-bit
// hash (exact in a double) that only the rank holding it writes, so that the world's sum is
// every rank's hashes.
struct Entries {
  std::vector<std::string> names;  // what each entry is, for the message
  std::vector<int64_t> reference;  // the entry each must equal in replica 0's block
  std::map<std::string, int64_t> base;  // a group's unit 0
  std::map<const Parameter*, int64_t> copies;  // a replicated parameter's entry on tensor rank 0
};

Entries entries_of(const Grid& grid, const std::vector<Parameter*>& params) {
  Entries e;
  for (const Parameter* p : params) {
    if (p->replicated()) {
      e.copies[p] = static_cast<int64_t>(e.names.size());
      for (int r = 0; r < grid.tp; ++r) {
        e.names.push_back(p->name + (grid.tp > 1 ? " on tensor rank " + std::to_string(r) : std::string()));
        e.reference.push_back(e.copies[p]);
      }
    } else if (!e.base.count(p->group().name)) {
      e.base[p->group().name] = static_cast<int64_t>(e.names.size());
      for (int64_t u = 0; u < p->group().units; ++u) {
        e.reference.push_back(static_cast<int64_t>(e.names.size()));
        e.names.push_back("unit " + std::to_string(u) + " of " + p->group().name);
      }
    }
  }
  return e;
}

}  // namespace

void check_replica_weights(Communicator& world, const Grid& grid, const std::vector<Parameter*>& params) {
  if (grid.world() == 1) return;
  FLEXTP_CHECK(world.size() == grid.world() && world.rank() == grid.world_rank(),
               "the replicas' weights are compared over the world's ", grid.world(), " ranks, not ", world.size());
  NoGradGuard ng;
  const Entries e = entries_of(grid, params);
  const int64_t n = static_cast<int64_t>(e.names.size());
  std::vector<uint64_t> hash(n, 0xcbf29ce484222325ull);
  std::vector<char> mine(n, 0);
  for (const Parameter* p : params) {
    std::vector<Tensor> tensors{p->value.detach().to(Device::cpu())};
    for (const auto& [slot, t] : p->state)  // a slot of another shape is outdated: its owner remakes it
      if (t.shape() == p->value.shape()) tensors.push_back(t.detach().to(Device::cpu()));
    if (p->replicated()) {
      const int64_t at = e.copies.at(p) + grid.tp_rank;
      mine[at] = 1;
      for (const Tensor& t : tensors) hash[at] = fingerprint(t.raw(), t.nbytes(), hash[at]);
      continue;
    }
    int64_t row = 0;
    for (int64_t u : p->units) {
      int64_t at = e.base.at(p->group().name) + u, rows = p->rows_of_unit(u);
      mine[at] = 1;
      for (const Tensor& t : tensors) hash[at] = hash_rows(t, row, rows, hash[at]);
      row += rows;
    }
  }
  Tensor all = Tensor::zeros({grid.dp * n}, DType::F64);
  double* h = all.data<double>();
  for (int64_t i = 0; i < n; ++i)
    if (mine[i]) h[grid.dp_rank * n + i] = static_cast<double>(hash[i] >> 12);
  world.all_reduce(all, ReduceOp::Sum);
  std::string differ;
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    // A unit equals replica 0's; every copy of a replicated parameter, replica 0's on tensor rank 0.
    for (int d = 0; d < grid.dp; ++d)
      if (h[d * n + i] != h[e.reference[i]]) {
        if (++count <= 3) differ += (differ.empty() ? "" : "; ") + e.names[i] + " (replica " + std::to_string(d) + ")";
        break;
      }
  }
  FLEXTP_CHECK(count == 0, "the data-parallel replicas have diverged: ", count,
               " unit(s) or replicated parameter(s) differ from replica 0's (tensor rank 0's), e.g. ", differ,
               ". Every replica must apply the same update to every unit, and every tensor rank to its copy of a "
               "replicated parameter (a bug in the gradient sum or the optimizer)");
}

}  // namespace flextp
