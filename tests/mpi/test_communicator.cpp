// Every collective of the MPI communicator against values computed by hand.
#include <doctest/doctest.h>

#include "parallel/comm/byte_mail.h"
#include "tests/mpi/mpi_context.h"

using namespace flextp;

TEST_CASE("all-reduce sums and maxima, broadcast") {
  Communicator& c = test::world();
  int r = c.rank(), n = c.size();
  Tensor t = Tensor::from_vector<float>({float(r), float(2 * r)}, {2});
  c.all_reduce(t);
  CHECK(t.to_vector<float>() == std::vector<float>{float(n * (n - 1) / 2), float(n * (n - 1))});
  Tensor m = Tensor::from_vector<double>({double(r), -double(r)}, {2});
  c.all_reduce(m, ReduceOp::Max);
  CHECK(m.to_vector<double>() == std::vector<double>{double(n - 1), 0.0});
  Tensor b = Tensor::full({3}, r == n - 1 ? 7 : 0);
  c.broadcast(b, n - 1);
  CHECK(b.to_vector<float>() == std::vector<float>{7, 7, 7});
}

TEST_CASE("all-gather, reduce-scatter") {
  Communicator& c = test::world();
  int r = c.rank(), n = c.size();
  Tensor out = Tensor::empty({n, 2});
  c.all_gather(Tensor::full({1, 2}, r), out);
  for (int k = 0; k < n; ++k) CHECK(out.to_vector<float>()[2 * k] == k);
  Tensor rs = Tensor::empty({2});
  c.reduce_scatter(Tensor::full({n * 2}, r + 1), rs);
  CHECK(rs.to_vector<float>() == std::vector<float>(2, float(n * (n + 1) / 2)));
}

TEST_CASE("grouped send/recv in a ring and all-to-all-v") {
  Communicator& c = test::world();
  int r = c.rank(), n = c.size();
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

TEST_CASE("ByteMail: labelled messages in pieces, taken in any order, and strings gathered") {
  ByteMail mail;
  const int r = mail.rank(), n = mail.size();
  CHECK(mail.all_gather(std::string(r, 'x') + std::to_string(r)) ==
        [&] {
          std::vector<std::string> each;
          for (int k = 0; k < n; ++k) each.push_back(std::string(k, 'x') + std::to_string(k));
          return each;
        }());
  ByteMail::set_piece_bytes(1000);  // several pieces a message, and a tail
  auto text = [](int from, int label) {
    std::string s(2500 * (label + 1) + from, '\0');
    for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>((i * 7 + from * 13 + label) % 251);
    return s;
  };
  // Each rank sends its right neighbour labels 2, 0, 1 (an empty message as label 3) and expects
  // its left neighbour's in another order.
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  for (int label : {2, 0, 1}) mail.send(right, label, std::make_shared<const std::string>(text(r, label)));
  mail.send(right, 3, std::make_shared<const std::string>());
  for (int label : {1, 3, 2, 0}) mail.expect(left, label);
  std::vector<ByteMail::Letter> got = mail.finish();
  ByteMail::set_piece_bytes(int64_t(1) << 30);
  REQUIRE(got.size() == 4);
  CHECK(mail.idle());
  for (const ByteMail::Letter& l : got) {
    INFO("label " << l.label);
    CHECK(l.from == left);
    CHECK(l.bytes == (l.label == 3 ? std::string() : text(left, l.label)));
  }
  mail.barrier();
}
