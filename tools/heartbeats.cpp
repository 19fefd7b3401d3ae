// flextp-heartbeats: the supervisor's watcher of one attempt of a job (scripts/supervise starts it
// beside mpirun; parallel/comm/heartbeat.h is the rank's side and the wire). It answers every
// rank's beat, and when an expected host falls silent for --timeout seconds (or is never heard
// within --startup) it writes the silent hosts to --lost-file, one line each
//   HOST LAST_HEARD_EPOCH_S NOTICED_EPOCH_S heard|never
// and from then on answers every beat "stop", so that the ranks still alive end themselves. Once
// no beat has come for three intervals after that, it writes --quiet-file: the job's processes
// that can still hear it are gone. It runs until it is killed.
//   flextp-heartbeats --token T --timeout 5 --hosts h0,h1 --port-file P --lost-file L --quiet-file Q
#include <CLI/CLI.hpp>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/parse_flags.h"
#include "core/timer.h"
#include "parallel/comm/heartbeat.h"

using namespace flextp;

namespace {

double epoch_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int bound_udp_socket(int* port) {
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET, a.sin_addr.s_addr = htonl(INADDR_ANY), a.sin_port = 0;
  socklen_t len = sizeof a;
  FLEXTP_CHECK(s >= 0 && bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                   getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0,
               "cannot open a UDP socket for the heartbeats");
  *port = ntohs(a.sin_port);
  return s;
}

void write_whole(const std::string& path, const std::string& text) {  // appears whole or not at all
  std::string tmp = path + ".tmp";
  std::ofstream(tmp) << text;
  FLEXTP_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "cannot write ", path);
}

struct Settings {
  std::string token, port_file, lost_file, quiet_file;
  std::vector<std::string> hosts;
  double timeout_s = 5, startup_s = 60;
};

int watch(const Settings& s) {
  int port = 0;
  const int sock = bound_udp_socket(&port);
  write_whole(s.port_file, std::to_string(port) + "\n");
  const double start = now_ms() / 1000, interval = heartbeat_interval_s(s.timeout_s);
  HostSilence silence(s.hosts, s.timeout_s, s.startup_s, start);
  double stopping_since = -1, last_beat = start;
  for (;;) {
    // A beat wakes it at once; the timeout only paces the judgement (a tenth of the interval would
    // do): waking every 20 ms slowed the job's steps 2.5% on 2 oversubscribed cores (measured).
    pollfd p{sock, POLLIN, 0};
    poll(&p, 1, static_cast<int>(interval * 500));
    const double now = now_ms() / 1000;
    char buf[512];
    sockaddr_in from{};
    socklen_t len = sizeof from;
    ssize_t n;
    while ((n = recvfrom(sock, buf, sizeof buf - 1, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &len)) > 0) {
      std::istringstream beat(std::string(buf, n));
      std::string word, token, host;
      if (!(beat >> word >> token >> host) || word != "beat") continue;
      last_beat = now;
      const bool ours = token == s.token && stopping_since < 0;
      if (ours) silence.heard(host, now);
      std::string answer = (ours ? "ok " : "stop ") + token;
      sendto(sock, answer.data(), answer.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
      len = sizeof from;
    }
    if (stopping_since < 0) {
      std::vector<HostSilence::Silent> lost = silence.silent(now);
      if (lost.empty()) continue;
      std::string text;
      const double to_epoch = epoch_s() - now;
      for (const auto& l : lost) {
        char line[400];
        std::snprintf(line, sizeof line, "%s %.3f %.3f %s\n", l.host.c_str(), l.since_s + to_epoch, now + to_epoch,
                      l.never_heard ? "never" : "heard");
        text += line;
      }
      write_whole(s.lost_file, text);
      stopping_since = now;
    } else if (now - std::max(stopping_since, last_beat) > 3 * interval && !s.quiet_file.empty()) {
      write_whole(s.quiet_file, "quiet\n");
      return 0;  // nothing of this attempt hears it any more
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"flextp-heartbeats: notices a silent host of a job (scripts/supervise runs it)"};
  Settings s;
  app.add_option("--token", s.token, "the attempt's token, which its ranks send")->required();
  app.add_option("--hosts", s.hosts, "the hosts that run ranks")->required()->delimiter(',');
  app.add_option("--timeout", s.timeout_s, "seconds of silence that lose a host")->check(above_zero());
  app.add_option("--startup", s.startup_s, "seconds a host may take to send its first beat")
      ->check(above_zero());
  app.add_option("--port-file", s.port_file, "where to write the UDP port it listens on")->required();
  app.add_option("--lost-file", s.lost_file, "where to write the silent hosts")->required();
  app.add_option("--quiet-file", s.quiet_file, "where to say that no beat comes any more");
  if (std::optional<int> status = parse_flags(app, argc, argv, "flextp-heartbeats")) return *status;
  try {
    return watch(s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flextp-heartbeats: error: %s\n", e.what());
    return 1;
  }
}
