#include "core/ops/adamw.h"

#include "core/dispatch.h"

namespace flextp {

void adamw_update(Tensor& p, const Tensor& g, Tensor& m, Tensor& v, const AdamWStep& s) {
  FLEXTP_CHECK(g.shape() == p.shape() && m.shape() == p.shape() && v.shape() == p.shape(),
               "adamw_update: parameter ", p.str(), ", gradient ", g.str(), ", m ", m.str(),
               " and v ", v.str(), " must share a shape");
  FLEXTP_DISPATCH(p.device(), adamw_update, p, g, m, v, s);
}

}  // namespace flextp
