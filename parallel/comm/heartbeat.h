#pragma once
// Showing the supervisor (scripts/launch --restarts) that a process and its host are alive,
// whatever its steps do. Every rank's thread sends a datagram to the supervisor's watcher
// (tools/heartbeats.cpp) each interval and hears "ok" back. A host whose ranks fall silent (power
// lost, its link down, every process frozen) is declared lost by the watcher within the timeout,
// without waiting for TCP or for a step; a slow step, a long snapshot or evaluation is no silence,
// for the thread beats beside them. A rank that hears no answer for as long is cut off (a
// partition), and one told "stop" belongs to a job being ended: either ends its process at once,
// so that it writes no snapshot and cannot rejoin when the link heals.
//
// The wire, one datagram each: "beat TOKEN HOST PID" from a rank; "ok TOKEN" or "stop TOKEN" back.
// TOKEN names one attempt of the job: a beat with another token (an old attempt's) hears "stop".
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace flextp {

// FLEXTP_HEARTBEAT, which the supervisor gives every rank: "HOST:PORT:TOKEN:TIMEOUT_SECONDS".
struct HeartbeatAddress {
  std::string host;
  int port = 0;
  std::string token;
  double timeout_s = 0;
};
HeartbeatAddress parse_heartbeat_address(const std::string& text);  // throws, naming what is wrong

// Beats every timeout / 10 (at least 20 ms, at most 1 s): a lost datagram or two is no silence.
double heartbeat_interval_s(double timeout_s);

// The watcher's judgement, on an injected clock: the expected hosts silent for longer than the
// timeout, or never heard within the startup time (processes that never started) once another
// host was heard.
class HostSilence {
 public:
  HostSilence(std::vector<std::string> hosts, double timeout_s, double startup_s, double now_s);
  void heard(const std::string& host, double now_s);  // a host not expected is ignored
  struct Silent {
    std::string host;
    double since_s;    // its last beat, or the start for one never heard
    bool never_heard;
  };
  std::vector<Silent> silent(double now_s) const;

 private:
  std::vector<std::string> hosts_;
  std::vector<double> last_s_;  // negative: never heard
  double timeout_s_, startup_s_, start_s_;
};

// A rank's side. The clock is injectable for tests; on_end is called once, from the thread, with
// why the process must end (by default it says so on stderr and ends the process, status
// kHeartbeatEndStatus: the main thread may be waiting in a collective that never returns).
class Heartbeat {
 public:
  using Clock = std::function<double()>;  // seconds
  using OnEnd = std::function<void(const std::string& why)>;
  Heartbeat(const HeartbeatAddress& to, Clock clock = nullptr, OnEnd on_end = nullptr);
  ~Heartbeat();
  // From FLEXTP_HEARTBEAT; null when it is not set (no supervisor watches this run).
  static std::unique_ptr<Heartbeat> from_environment();

 private:
  void run();
  HeartbeatAddress to_;
  Clock clock_;
  OnEnd on_end_;
  int socket_ = -1;
  std::string beat_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

constexpr int kHeartbeatEndStatus = 79;

}  // namespace flextp
