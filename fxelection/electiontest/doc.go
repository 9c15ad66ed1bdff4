// Package electiontest is what the author of an fxelection.Backend needs to
// test it on a real store: the conformance suite (RunBackendTests: the
// storage contract, then a smoke run of real electors and of package
// lock's Lockers on the backend), the chaos schedule (RunChaos, with
// Proxy, a fault-injecting TCP proxy), and hostile records and names for a
// decoder and its fuzz target (RawRecord, HostileRecords, CheckDecoded,
// CheckRecordRefused, CheckElectionNames). The fault-injecting Backend
// wrapper is package fxelection/electiontest/faultinject.
package electiontest
