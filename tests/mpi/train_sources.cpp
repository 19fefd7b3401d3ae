// trainer.cpp and train_faults.cpp belong to the train executable, not to the library the tests
// link: the multi-rank tests that drive a Trainer (test_step_collectives.cpp,
// test_replica_clipping.cpp) get them from here, compiled once.
#include "train_faults.cpp"
#include "trainer.cpp"
