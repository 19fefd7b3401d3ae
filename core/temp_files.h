#pragma once
// Where flextp's programs write files: the temporary files of atomic writes (write_file_atomic),
// PATH.tmp.<pid>.<random>, created only where nothing exists (O_EXCL | O_NOFOLLOW: a symlink
// planted at the name is refused, its target never written), and those left by processes that
// died mid-write removed on the next write of PATH; and the directories of outputs, made where
// they are missing.
#include <string>

namespace flextp {

// 16 hex digits from the system's entropy: names and ids no other process can predict or share.
std::string random_hex_id();

// A fresh name beside `path` that no other process can predict: PATH.tmp.<pid>.<16 hex digits>.
std::string temporary_path(const std::string& path);

// Creates `path` for writing (mode 0644) only if nothing, not even a dangling symlink, is
// there; returns the descriptor or throws naming the file.
int create_new_file(const std::string& path);

// Removes PATH.tmp.<pid> and PATH.tmp.<pid>.<suffix> files whose process no longer exists
// (a save killed mid-write); those of live processes are left alone. Returns how many it removed.
int remove_stale_temporaries(const std::string& path);

// `dir` where it exists, else the nearest path above it that exists ("." above the top of a
// relative path): where a missing directory would be made.
std::string existing_ancestor(const std::string& dir);

// Makes `dir` and the directories above it that are missing, as mkdir -p does: every output of
// flextp's programs (--save, --metrics, --export-hf, --out) makes its directory. Throws naming the
// file in the way (a path under a regular file) or the system's reason; "" is the current directory.
void make_directories(const std::string& dir);

}  // namespace flextp
