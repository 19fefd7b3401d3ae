#include "parallel/tp/repartition.h"

#include <algorithm>
#include <map>

#include "core/autograd.h"
#include "core/ops/shape_ops.h"
#include "parallel/tp/unit_rows.h"

namespace flextp {
namespace {

// The tensors of a parameter that travel with its units: the value, then each slot, the named
// ones (made as zeros where missing) and every other one it holds, in name order.
std::vector<Tensor*> travelling(Parameter& p, const std::vector<std::string>& slots) {
  for (const std::string& s : slots) p.slot(s);
  std::vector<Tensor*> t{&p.value};
  for (auto& [name, slot] : p.state) t.push_back(&p.slot(name));
  return t;
}

int64_t row_elems(const Parameter& p) {
  return p.value.size(0) ? p.value.numel() / p.value.size(0) : numel(logical_shape(p)) / p.logical_rows();
}

}  // namespace

RepartitionStats repartition(const std::vector<Parameter*>& params, const Partition& from,
                             const Partition& to, const std::vector<std::string>& slots,
                             Communicator* comm, TransferMethod method) {
  NoGradGuard ng;
  const int rank = comm ? comm->rank() : 0, size = comm ? comm->size() : 1;
  FLEXTP_CHECK(from.ranks() == size && to.ranks() == size, "repartition: partitions for ", from.ranks(),
               " and ", to.ranks(), " ranks on a communicator of ", size);
  RepartitionStats stats;
  std::vector<std::vector<Tensor>> send_parts(size);  // per destination, in packing order
  std::vector<int64_t> recv_elems(size, 0);
  DType dtype = DType::F32;
  Device device = Device::cpu();
  for (Parameter* p : params) {
    if (p->replicated()) continue;
    dtype = p->value.dtype();
    device = p->value.device();
    FLEXTP_CHECK(!p->grad().defined(), "repartition of ", p->name, " with a pending gradient: call it between steps");
    const std::vector<int>& old_owner = from.owners(p->group().name);
    const std::vector<int>& new_owner = to.owners(p->group().name);
    FLEXTP_CHECK(old_owner.size() == new_owner.size(), "repartition: group ", p->group().name, " changes size");
    std::vector<Tensor*> tensors = travelling(*p, slots);
    std::vector<int64_t> offsets = local_unit_offsets(*p);
    int64_t width = row_elems(*p);
    for (size_t u = 0; u < old_owner.size(); ++u) {
      if (old_owner[u] == new_owner[u]) continue;
      int64_t bytes = p->rows_of_unit(u) * width * tensors.size() * dtype_size(p->value.dtype());
      stats.bytes_minimum += bytes;
      if (old_owner[u] == rank) {
        auto at = std::find(p->units.begin(), p->units.end(), static_cast<int64_t>(u)) - p->units.begin();
        for (Tensor* t : tensors)
          send_parts[new_owner[u]].push_back(slice_rows(*t, offsets[at], p->rows_of_unit(u)));
      }
      if (new_owner[u] == rank) recv_elems[old_owner[u]] += p->rows_of_unit(u) * width * tensors.size();
    }
  }
  for (const auto& [group, owners] : to.groups()) {
    const std::vector<int>& old_owner = from.owners(group);
    for (size_t u = 0; u < owners.size(); ++u) stats.units_moved += old_owner[u] != owners[u];
  }

  // One message per (src, dst) pair.
  std::vector<Communicator::Transfer> sends, recvs;
  for (int peer = 0; peer < size; ++peer) {
    if (!send_parts[peer].empty()) {
      std::vector<Tensor> flat;
      for (const Tensor& t : send_parts[peer]) flat.push_back(view_as(t, {t.numel()}));
      Tensor buffer = concat_rows(flat);
      stats.bytes_sent += buffer.nbytes();
      sends.push_back({peer, buffer});
    }
    if (recv_elems[peer] > 0) recvs.push_back({peer, Tensor::empty({recv_elems[peer]}, dtype, device)});
  }
  if (comm && size > 1) {
    if (method == TransferMethod::PointToPoint) {
      comm->send_recv(sends, recvs);
    } else {  // the same messages, as one all-to-all-v
      std::vector<int64_t> sb(size, 0), rb(size, 0);
      std::vector<Tensor> out;
      for (const auto& s : sends) {
        sb[s.peer] = s.buffer.nbytes();
        out.push_back(s.buffer);
      }
      for (const auto& r : recvs) rb[r.peer] = r.buffer.nbytes();
      int64_t send_elems = 0, recv_elems_total = 0;
      for (const auto& s : sends) send_elems += s.buffer.numel();
      for (const auto& r : recvs) recv_elems_total += r.buffer.numel();
      // sends and recvs are in rank order already, as all-to-all-v packs them.
      Tensor send_all = send_elems ? concat_rows(out) : Tensor::empty({1}, dtype, device);
      Tensor recv_all = Tensor::empty({std::max<int64_t>(recv_elems_total, 1)}, dtype, device);
      comm->all_to_all_v(send_all, sb, recv_all, rb);
      int64_t at = 0;
      for (auto& r : recvs) {
        r.buffer.copy_from(slice_rows(recv_all, at, r.buffer.numel()));
        at += r.buffer.numel();
      }
    }
  }
  if (comm && size > 1) {  // every rank reports the same totals
    Tensor t = Tensor::from_vector<double>({double(stats.bytes_sent), double(sends.size())}, {2});
    comm->all_reduce(t);
    std::vector<double> v = t.to_vector<double>();
    stats.bytes_sent = static_cast<int64_t>(v[0]);
    stats.messages = static_cast<int64_t>(v[1]);
  } else {
    stats.messages = static_cast<int64_t>(sends.size());
  }

  // Unpack: read each source's buffer in the order it was packed.
  std::vector<int64_t> cursor(size, 0);
  std::map<int, Tensor> recv_of;
  for (const auto& r : recvs) recv_of[r.peer] = r.buffer;
  for (Parameter* p : params) {
    if (p->replicated()) continue;
    const std::vector<int>& old_owner = from.owners(p->group().name);
    const std::vector<int>& new_owner = to.owners(p->group().name);
    std::vector<Tensor*> tensors = travelling(*p, slots);
    std::vector<int64_t> offsets = local_unit_offsets(*p);
    int64_t width = row_elems(*p);
    std::vector<int64_t> new_units;
    std::vector<std::vector<Tensor>> rows(tensors.size());
    for (size_t i = 0; i < p->units.size(); ++i) {  // kept units, old local order
      int64_t u = p->units[i];
      if (new_owner[u] != rank) continue;
      new_units.push_back(u);
      for (size_t k = 0; k < tensors.size(); ++k)
        rows[k].push_back(slice_rows(*tensors[k], offsets[i], p->rows_of_unit(u)));
    }
    for (size_t u = 0; u < new_owner.size(); ++u) {  // arrivals, by unit id
      if (new_owner[u] != rank || old_owner[u] == rank) continue;
      int src = old_owner[u];
      new_units.push_back(static_cast<int64_t>(u));
      int64_t n = p->rows_of_unit(u) * width;
      Shape shape = p->value.shape();
      shape[0] = p->rows_of_unit(u);
      for (size_t k = 0; k < tensors.size(); ++k) {
        rows[k].push_back(view_as(slice_rows(recv_of.at(src), cursor[src], n), shape));
        cursor[src] += n;
      }
    }
    for (size_t k = 0; k < tensors.size(); ++k) {
      Tensor fresh;
      if (rows[k].empty()) {
        Shape shape = p->value.shape();
        shape[0] = 0;
        fresh = Tensor::empty(shape, p->value.dtype(), p->value.device());
      } else {
        fresh = concat_rows(rows[k]);
      }
      *tensors[k] = fresh;
    }
    p->value.set_requires_grad(true);
    p->units = new_units;
  }
  return stats;
}

}  // namespace flextp
