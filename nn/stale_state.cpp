#include "nn/stale_state.h"

#include <algorithm>

#include "core/ops/shape_ops.h"
#include "parallel/tp/unit_gather.h"

namespace flextp {
namespace {

std::string stale_mean_name(const Linear& l) { return l.prefix() + ".stale_mean"; }
std::string stale_seen_name(const Linear& l) { return l.prefix() + ".stale_seen"; }

// One row per unit of w's group, laid out like w's units: per-unit tensors gather and scatter
// exactly as parameter rows do.
Parameter one_row_per_unit(const Parameter& w, const Tensor& local) {
  Parameter p;
  p.name = w.name;
  p.layout = std::make_shared<const UnitLayout>(
      UnitLayout{w.layout->group, 1, (w.logical_rows() + w.unit_rows() - 1) / w.unit_rows(), HfLayout::AsIs});
  p.units = w.units;
  p.value = local;
  return p;
}

// An unsplit layer has no units to skip, hence no means.
bool imputes(const Linear& l) { return !l.weight.replicated(); }

}  // namespace

void gather_stale_means(const GPT& model, Communicator* comm, bool writer,
                        std::vector<std::pair<std::string, Tensor>>& out) {
  DType dtype = model.config().dtype;
  for (const Linear* l : model.row_split_layers()) {
    if (!imputes(*l)) continue;
    const Parameter& w = l->weight;
    int64_t n = static_cast<int64_t>(w.units.size()), width = w.value.size(1);
    Tensor mean = Tensor::zeros({n, width}, dtype);
    std::vector<double> seen(n, 0.0);
    for (int64_t i = 0; i < n; ++i) {
      const Tensor* m = l->stale_contribution(w.units[i]);
      if (!m) continue;
      slice_rows(mean, i, 1).copy_from(view_as(m->to(Device::cpu()), {1, width}));
      seen[i] = 1;
    }
    Tensor local_seen = Tensor::from_vector(seen, {n, 1}).to(dtype);
    Tensor all_seen = gather_logical(one_row_per_unit(w, local_seen), local_seen, comm);
    std::vector<double> flags = all_seen.to(DType::F64).to_vector<double>();
    if (std::none_of(flags.begin(), flags.end(), [](double f) { return f != 0; })) continue;  // the same on every rank
    Tensor all_mean = gather_logical(one_row_per_unit(w, mean), mean, comm);
    if (!writer) continue;
    out.push_back({stale_mean_name(*l), all_mean});
    out.push_back({stale_seen_name(*l), view_as(all_seen, {all_seen.size(0)})});
  }
}

void expect_stale_means(const GPT& model, const SafetensorsFile& state, std::map<std::string, Shape>& expected) {
  for (const Linear* l : model.row_split_layers()) {
    if (!imputes(*l)) continue;
    if (!state.tensors.count(stale_mean_name(*l)) && !state.tensors.count(stale_seen_name(*l))) continue;
    int64_t units = one_row_per_unit(l->weight, l->weight.value).logical_rows();
    expected[stale_mean_name(*l)] = {units, l->weight.value.size(1)};  // both, or the file is refused
    expected[stale_seen_name(*l)] = {units};
  }
}

void load_stale_means(GPT& model, const SafetensorsFile& state) {
  for (Linear* l : model.row_split_layers()) {
    if (!imputes(*l)) continue;
    std::map<int64_t, Tensor> means;
    auto m = state.tensors.find(stale_mean_name(*l));
    if (m != state.tensors.end()) {
      const Parameter& w = l->weight;
      // One row per unit in logical order: row u is unit u's mean.
      std::vector<double> flags = state.tensors.at(stale_seen_name(*l)).to(DType::F64).to_vector<double>();
      for (int64_t u : w.units)
        if (flags.at(u) != 0)
          means[u] = view_as(slice_rows(m->second, u, 1), {m->second.size(1)}).clone().to(w.value.device());
    }
    l->set_stale_means(std::move(means));
  }
}

}  // namespace flextp
