// Flushing denormal floats (core/denormals.h): set on every thread that computes, and no change to
// what training computes beyond f32 rounding.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/denormals.h"
#include "core/random.h"
#include "nn/gpt.h"
#include "optim/optimizer.h"

#ifdef _OPENMP
#include <omp.h>
#endif

using namespace flextp;

namespace {

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Whether this thread flushes: a product below f32's normal range comes out 0 (flush-to-zero) and
// the smallest denormal reads as 0 (denormals-are-zero). volatile: computed here, at run time.
bool this_thread_flushes() {
  volatile float tiny = 1e-30f, factor = 1e-10f, one = 1.0f;
  uint32_t smallest = 1;
  float denormal;
  std::memcpy(&denormal, &smallest, sizeof denormal);
  volatile float d = denormal;
  return bits_of(tiny * factor) == 0 && bits_of(d * one) == 0;
}

// How many threads of a full OpenMP team (and the calling thread, counted as one of them) flush.
int threads_flushing() {
  int count = 0;
#ifdef _OPENMP
#pragma omp parallel num_threads(omp_get_max_threads()) reduction(+ : count)
  count += this_thread_flushes();
#else
  count = this_thread_flushes();
#endif
  return count;
}

int team_size() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Sets the OpenMP thread count for a test and restores it after.
struct Threads {
  int before = team_size();
  explicit Threads(int n) { set(n); }
  ~Threads() { set(before); }
  static void set(int n) {
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
  }
};

// Restores the flushing the process had when a test began.
struct FlushRestore {
  bool before = denormals_flushed();
  ~FlushRestore() { flush_denormals(before); }
};

// A tiny GPT trained a few AdamW steps on fixed random tokens: the losses.
std::vector<double> tiny_gpt_losses(int steps) {
  GPTConfig c;
  c.vocab_size = 64, c.n_positions = 16, c.n_layer = 2, c.n_head = 2, c.n_embd = 32, c.mlp_unit = 16;
  c.vocab_pad = 1;
  GPT model(c);
  AdamW opt({0.9, 0.999, 1e-8, 0.01});
  std::vector<Parameter*> params = model.parameters();
  const int64_t b = 4, t = 16;
  std::vector<int32_t> ids(b * t), targets(b * t);
  for (size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<int32_t>(rng::uniform(i, 1, 3) * c.vocab_size);
    targets[i] = static_cast<int32_t>(rng::uniform(i, 2, 3) * c.vocab_size);
  }
  Tensor x = Tensor::from_vector(ids, {b, t}), y = Tensor::from_vector(targets, {b, t});
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    Tensor loss = model.loss(x, y);
    losses.push_back(loss.item());
    loss.backward();
    opt.step(params, 3e-3);
    for (Parameter* p : params) p->value.zero_grad();
  }
  return losses;
}

// AdamW on gradients so small that their squares, AdamW's second moment, are denormal: the
// parameters after three steps, and how many second-moment values were denormal after the first.
struct AdamWRun {
  std::vector<float> values;
  int denormal_v = 0;
};
AdamWRun adamw_on_tiny_gradients() {
  const int64_t n = 4096;
  std::vector<float> value(n), grad(n);
  for (int64_t i = 0; i < n; ++i) {
    value[i] = static_cast<float>(rng::uniform(i, 5, 3) - 0.5);
    grad[i] = static_cast<float>((rng::uniform(i, 6, 3) - 0.5) * 1e-18);  // g^2 ~ 1e-37 and below
  }
  Parameter p;
  p.name = "p";
  p.value = Tensor::from_vector(value, {n});
  p.value.set_requires_grad(true);
  AdamW opt({0.9, 0.999, 1e-8, 0.0});
  AdamWRun run;
  for (int s = 0; s < 3; ++s) {
    p.value.set_grad(Tensor::from_vector(grad, {n}));
    opt.step({&p}, 1e-3);
    if (s == 0)
      for (float v : p.state["v"].to_vector<float>()) run.denormal_v += std::fpclassify(v) == FP_SUBNORMAL;
  }
  run.values = p.value.to_vector<float>();
  return run;
}

}  // namespace

TEST_CASE("flush_denormals sets FTZ and DAZ on the calling thread and every OpenMP thread, and clears them") {
  FlushRestore restore;
  Threads threads(3);  // more than one thread even on a one-core machine
  if (!flush_denormals(false)) {
    MESSAGE("no FTZ/DAZ on this CPU: nothing to check");
    return;
  }
  // Off first: the pool's threads then exist before the switch is turned on (threads started later
  // would inherit it from the main thread and hide a switch set on the main thread only).
  CHECK_FALSE(this_thread_flushes());
  CHECK(threads_flushing() == 0);
  CHECK_FALSE(denormals_flushed());
  flush_denormals(true);
  CHECK(this_thread_flushes());
  CHECK(threads_flushing() == 3);
  CHECK(denormals_flushed());
  {
    Threads more(5);  // threads the OpenMP pool starts later take the setting of the thread that starts them
    CHECK(threads_flushing() == 5);
  }
  flush_denormals(false);
  CHECK(threads_flushing() == 0);
}

TEST_CASE("training computes the same with denormals flushed, to f32 rounding") {
  FlushRestore restore;
  flush_denormals(false);
  AdamWRun kept = adamw_on_tiny_gradients();
  std::vector<double> kept_losses = tiny_gpt_losses(6);
  if (!flush_denormals(true)) {
    MESSAGE("no FTZ/DAZ on this CPU: nothing to compare");
    return;
  }
  AdamWRun flushed = adamw_on_tiny_gradients();
  std::vector<double> flushed_losses = tiny_gpt_losses(6);

  // The case is real: AdamW's second moment held denormals, and flushing zeroed them.
  CHECK(kept.denormal_v > 100);
  CHECK(flushed.denormal_v == 0);
  REQUIRE(kept.values.size() == flushed.values.size());
  int differ = 0;
  for (size_t i = 0; i < kept.values.size(); ++i)
    differ += std::fabs(kept.values[i] - flushed.values[i]) > 2e-7 * std::fabs(kept.values[i]);
  CHECK(differ == 0);

  REQUIRE(kept_losses.size() == flushed_losses.size());
  for (size_t s = 0; s < kept_losses.size(); ++s) {
    INFO("step ", s, ": ", kept_losses[s], " kept, ", flushed_losses[s], " flushed");
    CHECK(std::fabs(kept_losses[s] - flushed_losses[s]) <= 1e-6 * std::fabs(kept_losses[s]));
  }
}
