// The balancing policies that --balance can name, one line each: FLEXTP_POLICY(NAME) registers
// the policy that parallel/balance/policies/NAME.cpp makes in
//   std::unique_ptr<BalancePolicy> make_NAME_policy(const BalanceOptions&).
// (Included twice by registry.cpp, hence no include guard.)
FLEXTP_POLICY(none)
FLEXTP_POLICY(migrate)
FLEXTP_POLICY(resize)
FLEXTP_POLICY(hybrid)
FLEXTP_POLICY(proportional)
