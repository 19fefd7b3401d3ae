// Tensor handles: creation, random streams, views, slicing, concatenation, copies, errors.
#include <doctest/doctest.h>

#include "core/allocator.h"
#include "core/ops/matmul.h"
#include "core/ops/shape_ops.h"
#include "core/random.h"
#include "tests/gpu_skip.h"
#include "tests/gradcheck.h"

using namespace flextp;

TEST_CASE("creation fills and reports shape, dtype, device") {
  Tensor z = Tensor::zeros({2, 3});
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.numel() == 6);
  CHECK(z.dtype() == DType::F32);
  CHECK(z.device() == Device::cpu());
  CHECK(z.str() == "f32[2, 3] on cpu");
  for (float v : z.to_vector<float>()) CHECK(v == 0.0f);
  for (double v : Tensor::full({4}, 2.5, DType::F64).to_vector<double>()) CHECK(v == 2.5);
  for (int32_t v : Tensor::ones({3}, DType::I32).to_vector<int32_t>()) CHECK(v == 1);
  Tensor s = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  CHECK(s.size(0) == 3);
  CHECK(s.size(-1) == 2);
  CHECK(Tensor::from_vector<float>({7}, {}).item() == 7.0);
}

TEST_CASE("bad creation and access give clear errors") {
  CHECK_THROWS_WITH_AS(Tensor::from_vector<float>({1, 2, 3}, {2, 2}),
                       doctest::Contains("do not fill shape [2, 2]"), Error);
  CHECK_THROWS_WITH_AS(Tensor::zeros({2, -1}), doctest::Contains("negative dimension"), Error);
  CHECK_THROWS_WITH_AS(Tensor::zeros({2}).data<double>(), doctest::Contains("accessed as f64"),
                       Error);
  CHECK_THROWS_WITH_AS(Tensor::zeros({2}).item(), doctest::Contains("one-element"), Error);
  CHECK_THROWS_WITH_AS(Tensor::zeros({2}).size(3), doctest::Contains("out of range"), Error);
  CHECK_THROWS_WITH_AS(Tensor().shape(), doctest::Contains("undefined tensor"), Error);
  CHECK_THROWS_WITH_AS(Device::parse("tpu"), doctest::Contains("unknown device 'tpu'"), Error);
  CHECK(Device::parse("cuda:1") == Device::cuda(1));
}

TEST_CASE("random tensors depend only on seed, stream and index") {
  Tensor a = Tensor::randn({1000}, 42, 7);
  Tensor b = Tensor::randn({1000}, 42, 7);
  CHECK(a.to_vector<float>() == b.to_vector<float>());
  CHECK(Tensor::randn({1000}, 43, 7).to_vector<float>() != a.to_vector<float>());
  CHECK(Tensor::randn({1000}, 42, 8).to_vector<float>() != a.to_vector<float>());
  // A slice generated on its own equals the same slice of the whole.
  Tensor tail = Tensor::randn({400}, 42, 7, 0, 1, DType::F32, Device::cpu(), 600);
  std::vector<float> whole = a.to_vector<float>(), part = tail.to_vector<float>();
  CHECK(std::vector<float>(whole.begin() + 600, whole.end()) == part);
  // Moments of a large sample are those of N(0, 1) and U(0, 1).
  std::vector<double> n = Tensor::randn({200000}, 1, 0, 0, 1, DType::F64).to_vector<double>();
  double m = 0, v = 0;
  for (double x : n) m += x;
  m /= n.size();
  for (double x : n) v += (x - m) * (x - m);
  v /= n.size();
  CHECK(std::abs(m) < 0.01);
  CHECK(std::abs(v - 1) < 0.02);
  std::vector<double> u(200000);
  for (size_t i = 0; i < u.size(); ++i) u[i] = 2 + 2 * rng::uniform(i, 0, 1);
  double um = 0, lo = 10, hi = -10;
  for (double x : u) {
    um += x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  CHECK(std::abs(um / u.size() - 3) < 0.01);
  CHECK(lo >= 2);
  CHECK(hi < 4);
}

TEST_CASE("reshape is a view, infers -1 and names both shapes on error") {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y = reshape(x, {3, -1});
  CHECK(y.shape() == Shape{3, 2});
  CHECK(y.same_storage(x));
  CHECK_THROWS_WITH_AS(reshape(x, {4, -1}), doctest::Contains("cannot reshape f32[2, 3]"), Error);
  CHECK_THROWS_WITH_AS(reshape(x, {-1, -1}), doctest::Contains("more than one -1"), Error);
}

TEST_CASE("row slices share data and concat stacks rows") {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  Tensor mid = slice_rows(x, 1, 2);
  CHECK(mid.to_vector<float>() == std::vector<float>{3, 4, 5, 6});
  CHECK(mid.same_storage(x));
  Tensor c = concat_rows({slice_rows(x, 3, 1), slice_rows(x, 0, 1)});
  CHECK(c.to_vector<float>() == std::vector<float>{7, 8, 1, 2});
  CHECK(slice_rows(x, 4, 0).numel() == 0);
  CHECK_THROWS_WITH_AS(slice_rows(x, 3, 2), doctest::Contains("out of range"), Error);
  CHECK_THROWS_WITH_AS(concat_rows({x, Tensor::zeros({1, 3})}),
                       doctest::Contains("does not stack"), Error);
}

TEST_CASE("slice and concat gradients") {
  test::check_gradients(
      [](const std::vector<Tensor>& in) {
        return concat_rows({slice_rows(in[0], 2, 3), in[1], slice_rows(in[0], 0, 1)});
      },
      {test::leaf({5, 3}, 1), test::leaf({2, 3}, 2)});
  test::check_gradients([](const std::vector<Tensor>& in) { return reshape(in[0], {6, 2}); },
                        {test::leaf({3, 4}, 3)});
}

TEST_CASE("clone copies, detach shares, dtype conversion round-trips") {
  Tensor x = Tensor::from_vector<float>({1.5f, -2.25f}, {2});
  Tensor c = x.clone();
  CHECK_FALSE(c.same_storage(x));
  CHECK(x.detach().same_storage(x));
  CHECK(x.to(DType::F64).to(DType::F32).to_vector<float>() == x.to_vector<float>());
  Tensor dst = Tensor::zeros({2});
  dst.copy_from(x);
  CHECK(dst.to_vector<float>() == x.to_vector<float>());
  CHECK_THROWS_WITH_AS(dst.copy_from(Tensor::zeros({3})), doctest::Contains("differ"), Error);
}

TEST_CASE("device copies: CPU always; without a GPU, CUDA copies fail with CUDA's error") {
  Tensor x = Tensor::randn({5}, 3);
  CHECK(x.to(Device::cpu()).same_storage(x));
  if (!cuda_compiled()) {
    CHECK_THROWS_WITH_AS(x.to(Device::cuda(0)), doctest::Contains("no CUDA backend"), Error);
    return;
  }
  if (cuda::device_count() == 0) {
    // A failed CUDA call is an exception naming the call and CUDA's code, not a crash.
    CHECK_THROWS_WITH_AS(x.to(Device::cuda(0)), doctest::Contains("CUDA call cudaSetDevice(device) failed: cuda"),
                         Error);
  }
}

TEST_CASE("on the GPU, device copies, fills, views and allocation errors") {
  if (test::skip_without_gpu()) return;
  Tensor x = Tensor::randn({5}, 3);
  Tensor back = x.to(Device::cuda(0)).to(Device::cpu());
  CHECK(back.to_vector<float>() == x.to_vector<float>());
  // Device-to-device copies, fills, and a view's copy land where they should.
  Tensor on_gpu = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}, Device::cuda(0));
  Tensor twice = on_gpu.clone();
  slice_rows(twice, 1, 1).fill_(9);
  CHECK(twice.to_vector<float>() == std::vector<float>{1, 2, 9, 9, 5, 6});
  CHECK(on_gpu.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  Tensor packed = concat_rows({slice_rows(on_gpu, 2, 1), slice_rows(twice, 0, 2)});
  CHECK(packed.to_vector<float>() == std::vector<float>{5, 6, 1, 2, 9, 9});
  // A matmul on a GPU tensor and a CPU tensor is refused with both named.
  CHECK_THROWS_WITH_AS(matmul(on_gpu, Tensor::zeros({2, 2}), false, false),
                       doctest::Contains("different devices"), Error);
  // Asking for more memory than the GPU has is an error naming the size, not a crash.
  CHECK_THROWS_WITH_AS(Tensor::empty({int64_t{1} << 45}, DType::F32, Device::cuda(0)),
                       doctest::Contains("out of memory on cuda:0"), Error);
}

TEST_CASE("the caching allocator reuses freed blocks") {
  size_t cached = 0;
  {
    Tensor a = Tensor::empty({1 << 16});
    cached = allocator_stats(Device::cpu()).cached;
  }
  AllocatorStats s = allocator_stats(Device::cpu());
  CHECK(s.cached == cached + (size_t{1} << 18));  // the freed block is kept, not returned
  void* before = nullptr;
  {
    Tensor b = Tensor::empty({1 << 16});
    before = b.raw();
  }
  Tensor c = Tensor::empty({1 << 16});
  CHECK(c.raw() == before);
}
