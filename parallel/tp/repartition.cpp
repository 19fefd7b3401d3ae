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

// What this rank sends: per destination, the rows of every travelling tensor of each unit
// leaving for it, in the order of the parameters; and per source, the elements it receives.
// `moved_bytes`: what all ranks send together, the same on every rank (each knows every owner).
struct Outgoing {
  std::vector<std::vector<Tensor>> parts;
  std::vector<int64_t> recv_elems;
  int64_t moved_bytes = 0;
  DType dtype = DType::F32;
  Device device = Device::cpu();
};

Outgoing pack(const std::vector<Parameter*>& params, const Partition& from, const Partition& to,
              const std::vector<std::string>& slots, int rank, int size) {
  Outgoing out{std::vector<std::vector<Tensor>>(size), std::vector<int64_t>(size, 0)};
  for (Parameter* p : params) {
    if (p->replicated()) continue;
    out.dtype = p->value.dtype();
    out.device = p->value.device();
    FLEXTP_CHECK(!p->grad().defined(), "repartition of ", p->name, " with a pending gradient: call it between steps");
    const std::vector<int>& old_owner = from.owners(p->group().name);
    const std::vector<int>& new_owner = to.owners(p->group().name);
    FLEXTP_CHECK(old_owner.size() == new_owner.size(), "repartition: group ", p->group().name, " changes size");
    std::vector<Tensor*> tensors = travelling(*p, slots);
    std::vector<int64_t> offsets = local_unit_offsets(*p);
    int64_t width = row_elems(*p);
    for (size_t u = 0; u < old_owner.size(); ++u) {
      if (old_owner[u] == new_owner[u]) continue;
      const int64_t elems = p->rows_of_unit(u) * width * static_cast<int64_t>(tensors.size());
      out.moved_bytes += elems * static_cast<int64_t>(dtype_size(out.dtype));
      if (old_owner[u] == rank) {
        auto at = std::find(p->units.begin(), p->units.end(), static_cast<int64_t>(u)) - p->units.begin();
        for (Tensor* t : tensors) out.parts[new_owner[u]].push_back(slice_rows(*t, offsets[at], p->rows_of_unit(u)));
      }
      if (new_owner[u] == rank) out.recv_elems[old_owner[u]] += elems;
    }
  }
  return out;
}

// The same messages as one all-to-all-v (sends and recvs are in rank order, as it packs them).
void all_to_all(Communicator& comm, const std::vector<Communicator::Transfer>& sends,
                std::vector<Communicator::Transfer>& recvs, DType dtype, Device device) {
  const int size = comm.size();
  std::vector<int64_t> sb(size, 0), rb(size, 0);
  std::vector<Tensor> out;
  int64_t send_elems = 0, recv_elems = 0;
  for (const auto& s : sends) {
    sb[s.peer] = s.buffer.nbytes();
    out.push_back(s.buffer);
    send_elems += s.buffer.numel();
  }
  for (const auto& r : recvs) {
    rb[r.peer] = r.buffer.nbytes();
    recv_elems += r.buffer.numel();
  }
  Tensor send_all = send_elems ? concat_rows(out) : Tensor::empty({1}, dtype, device);
  Tensor recv_all = Tensor::empty({std::max<int64_t>(recv_elems, 1)}, dtype, device);
  comm.all_to_all_v(send_all, sb, recv_all, rb);
  int64_t at = 0;
  for (auto& r : recvs) {
    r.buffer.copy_from(slice_rows(recv_all, at, r.buffer.numel()));
    at += r.buffer.numel();
  }
}

// A parameter's tensors after the move: the units it keeps, in their old local order, then its
// arrivals by unit id, read from each source's buffer in the order the source packed them.
void unpack(Parameter& p, const Partition& from, const Partition& to, const std::vector<std::string>& slots, int rank,
            const std::map<int, Tensor>& recv_of, std::vector<int64_t>& cursor) {
  const std::vector<int>& old_owner = from.owners(p.group().name);
  const std::vector<int>& new_owner = to.owners(p.group().name);
  std::vector<Tensor*> tensors = travelling(p, slots);
  std::vector<int64_t> offsets = local_unit_offsets(p);
  int64_t width = row_elems(p);
  std::vector<int64_t> new_units;
  std::vector<std::vector<Tensor>> rows(tensors.size());
  for (size_t i = 0; i < p.units.size(); ++i) {
    int64_t u = p.units[i];
    if (new_owner[u] != rank) continue;
    new_units.push_back(u);
    for (size_t k = 0; k < tensors.size(); ++k) rows[k].push_back(slice_rows(*tensors[k], offsets[i], p.rows_of_unit(u)));
  }
  for (size_t u = 0; u < new_owner.size(); ++u) {
    if (new_owner[u] != rank || old_owner[u] == rank) continue;
    int src = old_owner[u];
    new_units.push_back(static_cast<int64_t>(u));
    int64_t n = p.rows_of_unit(u) * width;
    Shape shape = p.value.shape();
    shape[0] = p.rows_of_unit(u);
    for (size_t k = 0; k < tensors.size(); ++k) {
      rows[k].push_back(view_as(slice_rows(recv_of.at(src), cursor[src], n), shape));
      cursor[src] += n;
    }
  }
  for (size_t k = 0; k < tensors.size(); ++k) {
    Shape empty = p.value.shape();
    empty[0] = 0;
    *tensors[k] = rows[k].empty() ? Tensor::empty(empty, p.value.dtype(), p.value.device()) : concat_rows(rows[k]);
  }
  p.value.set_requires_grad(true);
  p.units = new_units;
}

}  // namespace

int64_t repartition(const std::vector<Parameter*>& params, const Partition& from, const Partition& to,
                    const std::vector<std::string>& slots, Communicator* comm, TransferMethod method) {
  NoGradGuard ng;
  const int rank = comm ? comm->rank() : 0, size = comm ? comm->size() : 1;
  FLEXTP_CHECK(from.ranks() == size && to.ranks() == size, "repartition: partitions for ", from.ranks(),
               " and ", to.ranks(), " ranks on a communicator of ", size);
  Outgoing outgoing = pack(params, from, to, slots, rank, size);
  // One message per (src, dst) pair.
  std::vector<Communicator::Transfer> sends, recvs;
  for (int peer = 0; peer < size; ++peer) {
    if (!outgoing.parts[peer].empty()) {
      std::vector<Tensor> flat;
      for (const Tensor& t : outgoing.parts[peer]) flat.push_back(view_as(t, {t.numel()}));
      sends.push_back({peer, concat_rows(flat)});
    }
    if (outgoing.recv_elems[peer] > 0)
      recvs.push_back({peer, Tensor::empty({outgoing.recv_elems[peer]}, outgoing.dtype, outgoing.device)});
  }
  if (comm && size > 1) {
    if (method == TransferMethod::PointToPoint)
      comm->send_recv(sends, recvs);
    else
      all_to_all(*comm, sends, recvs, outgoing.dtype, outgoing.device);
  }
  std::vector<int64_t> cursor(size, 0);
  std::map<int, Tensor> recv_of;
  for (const auto& r : recvs) recv_of[r.peer] = r.buffer;
  for (Parameter* p : params)
    if (!p->replicated()) unpack(*p, from, to, slots, rank, recv_of, cursor);
  return outgoing.moved_bytes;
}

}  // namespace flextp
