#pragma once
// The flags of `train`, grouped by concern in --help (docs/flags.md lists them; a --config file
// takes the same names as keys), and the checks that name a flag in their errors.
#include <CLI/CLI.hpp>
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "train/option_table.h"
#include "train/options.h"

namespace flextp {

// Every flag of `train`, each declared once (train/option_table.h says what follows from a
// declaration), each showing its default, bound to `o`; also --config, --version and --debug. The
// testing harness comes last, marked as such. The table refers to `app` and `o`.
OptionTable add_train_flags(CLI::App& app, TrainOptions& o);

// Runs f, which reads what `flag` gave. The library's errors name the problem in its own terms;
// this puts the flag in front, so the user knows what to change:
//   --straggler: straggler '1:fast' (RANK:FACTOR[:FROM[:TO]]): 'fast' is not a number
template <typename F>
auto with_flag(const std::string& flag, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(flag + ": " + e.what());
  }
}

// Refuses flags that could not take effect (--save-every without --save, --keep-last without
// --save-every, --eval-only with --save or --export-hf, --no-save with --save): a flag that
// does nothing says so.
void check_flag_combinations(const TrainOptions& o);

// Refuses GPU settings (--comm-backend nccl, --attention cudnn, --bf16) on a device without them.
void check_device_flags(const ParallelOptions& p, const Device& device);

}  // namespace flextp
