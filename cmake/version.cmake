# Writes OUT, the header train --version reads: the project's VERSION and, where git can tell, the
# commit of the source tree SOURCE_DIR (with -dirty for uncommitted changes). Run at every build;
# the file changes, and what includes it rebuilds, only when they do.
execute_process(COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE commit ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE failed)
if(failed)
  set(commit "")
endif()
set(text "#pragma once\n#define FLEXTP_VERSION \"${VERSION}\"\n#define FLEXTP_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
