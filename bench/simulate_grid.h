#pragma once
// bench_simulate --grid: the data x tensor parallel model of bench/grid_model.h on a
// GPT-2-medium-sized model, grids of 8 x 8 to 64 x 8 ranks, printed as a table.

namespace flextp {

// Parses its own options (argv as bench_simulate got it, --grid included) and prints the table.
int simulate_grid_main(int argc, char** argv);

}  // namespace flextp
