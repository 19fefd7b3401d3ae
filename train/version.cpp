#include "train/version.h"

#include "flextp_version.h"  // generated in the build directory

namespace flextp {

std::string version_text() {
  std::string commit = FLEXTP_GIT_COMMIT;
  return std::string("flextp ") + FLEXTP_VERSION + (commit.empty() ? "" : " (git " + commit + ")");
}

}  // namespace flextp
