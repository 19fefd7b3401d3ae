#pragma once
// bench_simulate --oracle: the balancer against the best static split that exists, on 4 ranks,
// on paper (bench/simulate_oracle.cpp says how).

namespace flextp {

// Parses its own options (argv as bench_simulate got it, --oracle included) and prints the table.
int simulate_oracle_main(int argc, char** argv);

}  // namespace flextp
