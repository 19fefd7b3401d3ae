// The MLP kinds that GPTConfig::mlp (train's --mlp) can name, one line each: FLEXTP_MLP(NAME)
// registers the kind that its layer file defines as
//   MlpRegistration NAME_mlp_registration()   (usually: return registration_of<TheLayer>();)
// (Included twice by nn/mlp.cpp, hence no include guard.)
FLEXTP_MLP(gelu)
FLEXTP_MLP(swiglu)
