// The NCCL communicator on one GPU: its unique id travels over MPI, and every collective runs on
// the device, for device tensors and staged host ones. One rank (NCCL
// refuses two ranks on one GPU): scripts/gpu_check.sh runs it under `mpirun -np 1`; the 2- and
// 4-rank runs, and runs without a GPU, say that they skipped it.
#include <doctest/doctest.h>

#include "parallel/comm/nccl_communicator.h"
#include "tests/gpu_skip.h"
#include "tests/mpi/mpi_context.h"

using namespace flextp;

TEST_CASE("on the GPU, NCCL on one rank: every collective, device and host tensors") {
  if (test::skip_without_gpu()) return;
  if (test::world().size() != 1) {
    test::report_gpu_skip("NCCL needs a GPU per rank; run with mpirun -np 1", "NCCL on one rank");
    return;
  }
  const Device gpu = Device::cuda(0);
  for (int grouped = 0; grouped < 2; ++grouped) {
    INFO((grouped ? "a group of the world (a unique id per colour)" : "the world"));
    std::unique_ptr<Communicator> c = grouped ? make_nccl_communicator(0, 0) : make_nccl_communicator(0);
    REQUIRE(c->size() == 1);
    CHECK(std::string(c->backend()) == "nccl");
    for (const Device& d : {gpu, Device::cpu()}) {
      INFO((d.is_cuda() ? "device tensors" : "host tensors (staged)"));
      Tensor t = Tensor::from_vector<float>({1, -2, 3}, {3}, d);
      c->all_reduce(t, ReduceOp::Sum);
      CHECK(t.to_vector<float>() == std::vector<float>{1, -2, 3});
      c->all_reduce(t, ReduceOp::Max);
      CHECK(t.to_vector<float>() == std::vector<float>{1, -2, 3});
      Tensor f64 = Tensor::from_vector<double>({0.5, 1e300}, {2}, d);
      c->broadcast(f64, 0);
      CHECK(f64.to_vector<double>() == std::vector<double>{0.5, 1e300});
      Tensor out = Tensor::zeros({1, 3}, DType::F32, d);
      c->all_gather(view_as(t, {1, 3}), out);
      CHECK(out.to_vector<float>() == std::vector<float>{1, -2, 3});
      Tensor part = Tensor::zeros({3}, DType::F32, d);
      c->reduce_scatter(t, part);
      CHECK(part.to_vector<float>() == std::vector<float>{1, -2, 3});
      Tensor got = Tensor::zeros({3}, DType::F32, d);
      c->send_recv({{0, t}}, {{0, got}});
      CHECK(got.to_vector<float>() == std::vector<float>{1, -2, 3});
      Tensor back = Tensor::zeros({3}, DType::F32, d);
      c->all_to_all_v(t, {12}, back, {12});
      CHECK(back.to_vector<float>() == std::vector<float>{1, -2, 3});
      Tensor ids = Tensor::from_vector<int32_t>({7, 8}, {2}, d);
      c->all_reduce(ids, ReduceOp::Sum);
      CHECK(ids.to_vector<int32_t>() == std::vector<int32_t>{7, 8});
      c->barrier();
    }
  }
}
