// The first failed check on any rank ends every rank: the other ranks would otherwise wait in
// their next collective until ctest's timeout. Registered after the console reporter (a higher
// priority number), so the failure, with its INFO context, is printed before the abort.
#include <doctest/doctest.h>

#include <cstdio>
#include <iostream>

#include "parallel/comm/mpi_communicator.h"
#include "tests/mpi/mpi_context.h"

namespace flextp::test {
namespace {

struct AbortEveryRank : doctest::IReporter {
  explicit AbortEveryRank(const doctest::ContextOptions&) {}

  [[noreturn]] static void abort(const char* what) {
    std::cout.flush();
    std::fprintf(stderr, "rank %d: %s: aborting every rank\n", world().rank(), what);
    std::fflush(stderr);
    MpiRuntime::abort_all(1);
  }

  void log_assert(const doctest::AssertData& a) override {
    if (a.m_failed && !(a.m_at & doctest::assertType::is_warn)) abort("a check failed");
  }
  void log_message(const doctest::MessageData& m) override {
    if (!(m.m_severity & doctest::assertType::is_warn)) abort("FAIL");
  }
  void test_case_exception(const doctest::TestCaseException& e) override {
    // A crash (a signal: e.g. the SIGTERM of another rank's abort) ends this process anyway.
    if (!e.is_crash) abort("an exception escaped a test case");
  }

  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace
}  // namespace flextp::test

DOCTEST_REGISTER_REPORTER("abort-every-rank", 1, flextp::test::AbortEveryRank);
