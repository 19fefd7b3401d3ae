// Every collective of the MPI communicator against values computed by hand, with both ways of
// waiting (spinning, and sleeping between polls, parallel/comm/mpi_communicator.h).
#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/mpi/mpi_context.h"

using namespace flextp;

namespace {

// A world communicator whose waits sleep between polls: no spinning at all, so that a rank that
// arrives early takes the sleeping path in every call.
Communicator& sleeping_world() {
  static std::unique_ptr<Communicator> comm = [] {
    flextp::set_mpi_idle_wait({true, 0, 50});
    std::unique_ptr<Communicator> c = make_mpi_communicator(0);
    flextp::set_mpi_idle_wait({});
    return c;
  }();
  return *comm;
}

// Rank 0 comes late, so the others wait in the call.
void late_on_rank0(Communicator& c) {
  if (c.rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

void all_reduce_and_broadcast(Communicator& c) {
  int r = c.rank(), n = c.size();
  Tensor t = Tensor::from_vector<float>({float(r), float(2 * r)}, {2});
  late_on_rank0(c);
  c.all_reduce(t);
  CHECK(t.to_vector<float>() == std::vector<float>{float(n * (n - 1) / 2), float(n * (n - 1))});
  Tensor m = Tensor::from_vector<double>({double(r), -double(r)}, {2});
  c.all_reduce(m, ReduceOp::Max);
  CHECK(m.to_vector<double>() == std::vector<double>{double(n - 1), 0.0});
  Tensor b = Tensor::full({3}, r == n - 1 ? 7 : 0);
  c.broadcast(b, n - 1);
  CHECK(b.to_vector<float>() == std::vector<float>{7, 7, 7});
}

void all_gather_and_reduce_scatter(Communicator& c) {
  int r = c.rank(), n = c.size();
  late_on_rank0(c);
  Tensor out = Tensor::empty({n, 2});
  c.all_gather(Tensor::full({1, 2}, r), out);
  for (int k = 0; k < n; ++k) CHECK(out.to_vector<float>()[2 * k] == k);
  Tensor rs = Tensor::empty({2});
  c.reduce_scatter(Tensor::full({n * 2}, r + 1), rs);
  CHECK(rs.to_vector<float>() == std::vector<float>(2, float(n * (n + 1) / 2)));
}

void send_recv_and_all_to_all(Communicator& c) {
  int r = c.rank(), n = c.size();
  late_on_rank0(c);
  Tensor in = Tensor::empty({4});
  c.send_recv({{(r + 1) % n, Tensor::full({4}, r)}}, {{(r + n - 1) % n, in}});
  CHECK(in.to_vector<float>() == std::vector<float>(4, float((r + n - 1) % n)));
  // Rank r sends (k + 1) floats of value 100 r + k to rank k.
  std::vector<float> send;
  std::vector<int64_t> sb(n), rb(n);
  for (int k = 0; k < n; ++k) {
    for (int i = 0; i <= k; ++i) send.push_back(100.0f * r + k);
    sb[k] = 4 * (k + 1);
    rb[k] = 4 * (r + 1);
  }
  Tensor recv = Tensor::empty({n * (r + 1)});
  c.all_to_all_v(Tensor::from_vector(send, {int64_t(send.size())}), sb, recv, rb);
  std::vector<float> got = recv.to_vector<float>();
  for (int k = 0; k < n; ++k)
    for (int i = 0; i <= r; ++i) CHECK(got[k * (r + 1) + i] == 100.0f * k + r);
  CHECK_THROWS_WITH_AS(c.send_recv({{r, Tensor::empty({1})}}, {}), doctest::Contains("bad peer"), Error);
}

}  // namespace

TEST_CASE("all-reduce sums and maxima, broadcast") {
  all_reduce_and_broadcast(test::world());
  all_reduce_and_broadcast(sleeping_world());
}

TEST_CASE("all-gather, reduce-scatter") {
  all_gather_and_reduce_scatter(test::world());
  all_gather_and_reduce_scatter(sleeping_world());
}

TEST_CASE("grouped send/recv in a ring and all-to-all-v") {
  send_recv_and_all_to_all(test::world());
  send_recv_and_all_to_all(sleeping_world());
}

TEST_CASE("a sleeping barrier holds every rank until the last arrives") {
  test::SharedTempDir dir("barrier");
  Communicator& c = sleeping_world();
  const std::string mark = dir.path + "/rank0-was-here";
  if (c.rank() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ofstream(mark) << "1";
  }
  c.barrier();
  CHECK(std::ifstream(mark).good());
}

TEST_CASE("an idle wait that cannot work is refused") {
  CHECK_THROWS_WITH_AS(set_mpi_idle_wait({true, -1, 50}), doctest::Contains("spinning must be >= 0"), Error);
  CHECK_THROWS_WITH_AS(set_mpi_idle_wait({true, 0, 0}), doctest::Contains("sleeping > 0"), Error);
}
