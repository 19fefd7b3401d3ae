#pragma once
// What train --version prints: "flextp 0.1.0 (git 9fb0d35a1b2c)", or the version alone where the
// build found no git (cmake/version.cmake).
#include <string>

namespace flextp {

std::string version_text();

}  // namespace flextp
