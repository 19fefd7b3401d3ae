#include "parallel/comm/heartbeat.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/error.h"
#include "core/timer.h"

namespace flextp {

HeartbeatAddress parse_heartbeat_address(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ':');) parts.push_back(part);
  HeartbeatAddress a;
  FLEXTP_CHECK(parts.size() == 4 && !parts[0].empty() && !parts[2].empty(), "FLEXTP_HEARTBEAT '", text,
               "' is not HOST:PORT:TOKEN:TIMEOUT_SECONDS");
  a.host = parts[0], a.token = parts[2];
  char* end = nullptr;
  long port = std::strtol(parts[1].c_str(), &end, 10);
  FLEXTP_CHECK(*end == 0 && port > 0 && port < 65536, "FLEXTP_HEARTBEAT '", text, "': port '", parts[1],
               "' is not 1-65535");
  a.port = static_cast<int>(port);
  a.timeout_s = std::strtod(parts[3].c_str(), &end);
  FLEXTP_CHECK(*end == 0 && a.timeout_s > 0, "FLEXTP_HEARTBEAT '", text, "': timeout '", parts[3],
               "' is not a positive number of seconds");
  return a;
}

double heartbeat_interval_s(double timeout_s) { return std::clamp(timeout_s / 10, 0.02, 1.0); }

HostSilence::HostSilence(std::vector<std::string> hosts, double timeout_s, double startup_s, double now_s)
    : hosts_(std::move(hosts)), last_s_(hosts_.size(), -1.0), timeout_s_(timeout_s), startup_s_(startup_s),
      start_s_(now_s) {}

void HostSilence::heard(const std::string& host, double now_s) {
  auto it = std::find(hosts_.begin(), hosts_.end(), host);
  if (it != hosts_.end()) last_s_[it - hosts_.begin()] = now_s;
}

std::vector<HostSilence::Silent> HostSilence::silent(double now_s) const {
  std::vector<Silent> out;
  // Until some host beats, the program may be one that does not (another program than train):
  // nothing is judged then, and mpirun alone notices what dies.
  if (std::all_of(last_s_.begin(), last_s_.end(), [](double t) { return t < 0; })) return out;
  for (size_t i = 0; i < hosts_.size(); ++i) {
    bool never = last_s_[i] < 0;
    double since = never ? start_s_ : last_s_[i];
    if (now_s - since > (never ? startup_s_ : timeout_s_)) out.push_back({hosts_[i], since, never});
  }
  return out;
}

namespace {

int connected_udp_socket(const HeartbeatAddress& to) {
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_INET, hints.ai_socktype = SOCK_DGRAM;
  int err = getaddrinfo(to.host.c_str(), std::to_string(to.port).c_str(), &hints, &found);
  FLEXTP_CHECK(err == 0, "FLEXTP_HEARTBEAT: cannot resolve the supervisor's host '", to.host, "': ",
               gai_strerror(err));
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  bool ok = s >= 0 && connect(s, found->ai_addr, found->ai_addrlen) == 0;
  freeaddrinfo(found);
  FLEXTP_CHECK(ok, "FLEXTP_HEARTBEAT: cannot open a socket to ", to.host, ":", to.port);
  return s;
}

std::string this_host() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace

Heartbeat::Heartbeat(const HeartbeatAddress& to, Clock clock, OnEnd on_end)
    : to_(to), clock_(std::move(clock)), on_end_(std::move(on_end)) {
  if (!clock_) clock_ = [] { return now_ms() / 1000.0; };
  if (!on_end_)
    on_end_ = [](const std::string& why) {
      std::fprintf(stderr, "train: heartbeat: %s; ending this process (no snapshot, no save)\n", why.c_str());
      std::fflush(stderr);
      ::_exit(kHeartbeatEndStatus);
    };
  socket_ = connected_udp_socket(to_);
  beat_ = "beat " + to_.token + " " + this_host() + " " + std::to_string(getpid());
  thread_ = std::thread([this] { run(); });
}

Heartbeat::~Heartbeat() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (socket_ >= 0) close(socket_);
}

void Heartbeat::run() {
  const double interval = heartbeat_interval_s(to_.timeout_s);
  const std::string ok = "ok " + to_.token, stop = "stop " + to_.token;
  double last_answer = clock_();
  while (!stop_) {
    send(socket_, beat_.data(), beat_.size(), MSG_NOSIGNAL);  // a refused or lost one is a missed beat
    // The answers until the next beat is due (paced on the real clock; judged on the injected one).
    for (double due = now_ms() + interval * 1000, left; !stop_ && (left = due - now_ms()) > 0;) {
      pollfd p{socket_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left) + 1) <= 0) continue;
      char buf[256];
      ssize_t n;
      while ((n = recv(socket_, buf, sizeof buf, MSG_DONTWAIT)) >= 0 || errno == ECONNREFUSED) {
        std::string answer(buf, std::max<ssize_t>(n, 0));
        if (answer == ok) last_answer = clock_();
        if (answer == stop) return on_end_("the supervisor ends this attempt of the job (" + to_.token + ")");
      }
    }
    double silent = clock_() - last_answer;
    if (silent > to_.timeout_s) {
      char why[200];
      std::snprintf(why, sizeof why, "no answer from the supervisor at %s:%d for %.1f s: this host is cut off",
                    to_.host.c_str(), to_.port, silent);
      return on_end_(why);
    }
  }
}

std::unique_ptr<Heartbeat> Heartbeat::from_environment() {
  const char* v = std::getenv("FLEXTP_HEARTBEAT");
  if (!v || !*v) return nullptr;
  return std::make_unique<Heartbeat>(parse_heartbeat_address(v));
}

}  // namespace flextp
