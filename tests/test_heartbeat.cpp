// The heartbeats that find a silent host (parallel/comm/heartbeat.h): the watcher's judgement on
// an injected clock, and a rank's side against a fake watcher on loopback (judged on an injected
// clock; the test waits for events, bounded, and asserts no wall-clock time).
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "parallel/comm/heartbeat.h"

using namespace flextp;

TEST_CASE("heartbeat address: HOST:PORT:TOKEN:TIMEOUT, and each bad part named") {
  HeartbeatAddress a = parse_heartbeat_address("h0:4242:77-1-9:5");
  CHECK(a.host == "h0");
  CHECK(a.port == 4242);
  CHECK(a.token == "77-1-9");
  CHECK(a.timeout_s == 5.0);
  CHECK_THROWS_WITH_AS(parse_heartbeat_address("h0:4242"), doctest::Contains("is not HOST:PORT:TOKEN:TIMEOUT_SECONDS"),
                       Error);
  CHECK_THROWS_WITH_AS(parse_heartbeat_address("h0:http:t:5"), doctest::Contains("port 'http' is not 1-65535"), Error);
  CHECK_THROWS_WITH_AS(parse_heartbeat_address("h0:70000:t:5"), doctest::Contains("port '70000'"), Error);
  CHECK_THROWS_WITH_AS(parse_heartbeat_address("h0:1:t:0"), doctest::Contains("timeout '0' is not a positive"), Error);
  CHECK_THROWS_WITH_AS(parse_heartbeat_address("h0:1::5"), doctest::Contains("is not HOST:PORT"), Error);
  CHECK(heartbeat_interval_s(5) == doctest::Approx(0.5));
  CHECK(heartbeat_interval_s(100) == doctest::Approx(1.0));
  CHECK(heartbeat_interval_s(0.01) == doctest::Approx(0.02));
}

TEST_CASE("host silence: a host unheard for the timeout is lost; one never heard, after the startup") {
  HostSilence s({"h0", "h1", "h2"}, /*timeout*/ 5, /*startup*/ 60, /*now*/ 100);
  CHECK(s.silent(200).empty());  // nobody beats yet: perhaps a program that does not beat at all
  s.heard("h0", 101), s.heard("h1", 101.5), s.heard("h9", 101);  // h9 is not expected: ignored
  CHECK(s.silent(106).empty());  // h0 silent 5.0 s: not more than the timeout
  std::vector<HostSilence::Silent> lost = s.silent(106.2);
  REQUIRE(lost.size() == 1);
  CHECK(lost[0].host == "h0");
  CHECK(lost[0].since_s == 101);
  CHECK_FALSE(lost[0].never_heard);
  s.heard("h0", 106.2), s.heard("h1", 106.2);
  CHECK(s.silent(160).size() == 2);  // everyone silent long enough, h2 included (never heard)
  CHECK(s.silent(110).empty());      // h2 has 60 s from the start to send its first beat
  lost = s.silent(160.5);
  CHECK(lost.back().host == "h2");
  CHECK(lost.back().never_heard);
  CHECK(lost.back().since_s == 100);
}

namespace {

// A watcher that records the beats and answers what the test says.
struct FakeWatcher {
  int sock = socket(AF_INET, SOCK_DGRAM, 0);
  int port = 0;
  FakeWatcher() {
    sockaddr_in a{};
    a.sin_family = AF_INET, a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    REQUIRE(bind(sock, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(getsockname(sock, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port = ntohs(a.sin_port);
  }
  ~FakeWatcher() { close(sock); }
  // The next beat (bounded wait), answered with `answer` unless it is empty.
  std::string next_beat(const std::string& answer) {
    pollfd p{sock, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) return "";
    char buf[256];
    sockaddr_in from{};
    socklen_t len = sizeof from;
    ssize_t n = recvfrom(sock, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (!answer.empty()) sendto(sock, answer.data(), answer.size(), 0, reinterpret_cast<sockaddr*>(&from), len);
    return std::string(buf, n > 0 ? n : 0);
  }
};

struct Ending {
  std::mutex m;
  std::string why;
  void set(const std::string& w) {
    std::lock_guard<std::mutex> l(m);
    why = w;
  }
  std::string wait() {  // bounded: a broken heartbeat fails the test instead of hanging it
    for (int i = 0; i < 1000; ++i) {
      {
        std::lock_guard<std::mutex> l(m);
        if (!why.empty()) return why;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return "";
  }
};

}  // namespace

TEST_CASE("a rank's heartbeat: beats with its host and pid; cut off after the timeout unanswered") {
  FakeWatcher w;
  std::atomic<double> now{0};
  Ending ending;
  Heartbeat beat({"127.0.0.1", w.port, "tok", 1.0}, [&] { return now.load(); },
                 [&](const std::string& why) { ending.set(why); });
  std::string first = w.next_beat("ok tok");
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  CHECK(first == "beat tok " + std::string(host) + " " + std::to_string(getpid()));
  w.next_beat(""), w.next_beat("");  // the answer was taken in, at time 0, before these left
  now = 0.9;
  w.next_beat("ok other-token");  // another attempt's answer is no answer
  w.next_beat("");
  now = 2.5;  // 2.5 s since the only answer that counts: more than the timeout
  CHECK(ending.wait() == "no answer from the supervisor at 127.0.0.1:" + std::to_string(w.port) +
                             " for 2.5 s: this host is cut off");
}

TEST_CASE("a rank's heartbeat: answered in time it goes on; told stop it ends") {
  FakeWatcher w;
  std::atomic<double> now{0};
  Ending ending;
  Heartbeat beat({"127.0.0.1", w.port, "tok", 1.0}, [&] { return now.load(); },
                 [&](const std::string& why) { ending.set(why); });
  for (int i = 1; i <= 5; ++i) {  // 0.8 s between answers, 4 s in all: never cut off
    now = 0.8 * i;
    CHECK(w.next_beat("ok tok").rfind("beat tok ", 0) == 0);
  }
  w.next_beat("");  // the last answer reached the rank before this beat left it
  {
    std::lock_guard<std::mutex> l(ending.m);
    CHECK(ending.why.empty());
  }
  w.next_beat("stop tok");
  CHECK(ending.wait() == "the supervisor ends this attempt of the job (tok)");
}

TEST_CASE("a rank's heartbeat: a supervisor host that does not resolve is named") {
  CHECK_THROWS_WITH_AS(Heartbeat({"no-such-host.invalid", 9, "t", 1}), doctest::Contains("no-such-host.invalid"), Error);
}
