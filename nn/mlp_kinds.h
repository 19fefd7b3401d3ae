// The MLP kinds that GPTConfig::mlp (train's --mlp) can name, one line each: FLEXTP_MLP(NAME)
// registers the kind that its layer file defines as
//   MlpKind NAME_mlp_kind()   (usually: return mlp_kind_of<TheLayer>();)
// (Included twice by nn/mlp_layer.cpp, hence no include guard.)
FLEXTP_MLP(gelu)
FLEXTP_MLP(swiglu)
