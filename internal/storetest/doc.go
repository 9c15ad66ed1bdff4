// Package storetest holds the repository's own harnesses for its stores,
// beside the public kit fxelection/electiontest: fault scenarios against a
// real server (RunFaultTests), the Watcher and push wake-up checks
// (RunWatcherTest, CheckPushHandover), the pool checks (CheckPool;
// CheckPoolKill, with RunPoolChild, kills a worker process for real) and
// the benchmarks every store shares (RunBackendBenchmarks,
// RunHandoverBenchmark).
package storetest
