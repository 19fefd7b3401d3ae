#include "core/ops/embedding.h"

#include "core/autograd.h"
#include "core/dispatch.h"

namespace flextp {

Tensor embedding(const Tensor& ids, const Tensor& table) {
  FLEXTP_CHECK(ids.dtype() == DType::I32, "embedding: ids must be i32, got ", ids.str());
  FLEXTP_CHECK(table.ndim() == 2, "embedding: table must be [V, C], got ", table.str());
  detail::check_same_device("embedding", ids, table);
  std::vector<int32_t> copy;
  const int32_t* id = detail::host_ints(ids, copy);
  for (int64_t i = 0; i < ids.numel(); ++i)
    FLEXTP_CHECK(id[i] >= -1 && id[i] < table.size(0), "embedding: id ", id[i], " at position ", i,
                 " is outside the table's ", table.size(0), " rows");
  Shape out_shape = ids.shape();
  out_shape.push_back(table.size(1));
  Tensor out = Tensor::empty(out_shape, table.dtype(), table.device());
  FLEXTP_DISPATCH(table.device(), embedding_forward, ids, table, out);
  Tensor idd = ids.detach();
  Shape table_shape = table.shape();
  record("embedding", out, {ids, table},
         [idd, table_shape](const Tensor& g, const std::vector<bool>&) {
           Tensor dtable = Tensor::empty(table_shape, g.dtype(), g.device());
           FLEXTP_DISPATCH(g.device(), embedding_backward, idd, g, dtable);
           return std::vector<Tensor>{Tensor(), dtable};
         });
  return out;
}

}  // namespace flextp
