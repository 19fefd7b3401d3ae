#pragma once
// Files moved between hosts: each host keeps its own copy of a directory (a snapshot's, after
// losing a host), and what one host lacks another sends over ByteMail, to be written at the same
// path there.
#include <string>
#include <vector>

#include "parallel/comm/byte_mail.h"

namespace flextp {

// Placed ranks by host, hosts in the order of their first rank (`hosts[r]`: rank r's; one host when
// `hosts` is empty).
std::vector<std::vector<int>> ranks_by_host(const std::vector<std::string>& hosts, int ranks);
// The first rank of each host: it reads and writes the host's files for the others.
std::vector<int> host_leads(const std::vector<std::string>& hosts, int ranks);

struct FileCopy {
  int from = 0, to = 0;  // ranks
  std::string path;      // read on `from`'s host, written at the same path on `to`'s
};
// A collective over `mail` (every rank passes the same list; null: one process, nothing to copy).
// Each file is read once however many ranks it goes to, and written (its directory made, through a
// temporary file and a rename) in the order of the list: a checkpoint's state before its weights,
// as a save writes them.
void copy_files(ByteMail* mail, const std::vector<FileCopy>& copies);

}  // namespace flextp
