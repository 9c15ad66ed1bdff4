// Package watch follows an election's leader without campaigning: a Watcher
// reads the lease through fxelection.Backend.Get every Config.PollInterval
// (jittered up to 1.2 ×) and, on a backend that pushes releases
// (backendkit.Notifier), also at once when one is pushed. It is for
// processes that are not candidates but need to know the leader, for
// example to route requests to the address the leader advertises in its
// metadata.
//
//	w, err := watch.New(watch.Config{Name: "billing"}, backend)
//	if err != nil { … }
//	_ = w.Start(ctx)
//	defer w.Stop(context.Background())
//	if info, ok := w.Leader(); ok && info.HasLeader { … }
//
// Under fx, watch.Module provides a *Watcher for the watch.Config and the
// fxelection.Backend in the graph, started and stopped with the app. The
// Watcher's doc states how stale its answer can be on each kind of store.
package watch
