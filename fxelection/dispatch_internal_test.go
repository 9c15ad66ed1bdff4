package fxelection

import "testing"

// TestDispatcherDropsAtMaxQueued: behind a blocked handler, droppable
// callbacks are queued until maxQueued wait (the running one not counted)
// and dropped from then on; the others are never dropped.
func TestDispatcherDropsAtMaxQueued(t *testing.T) {
	d := newDispatcher(nil)
	block, running := make(chan struct{}), make(chan struct{})
	d.enqueue("blocked", func() { close(running); <-block }, false)
	<-running
	for i := range maxQueued {
		if !d.enqueue("droppable", func() {}, true) {
			t.Fatalf("a droppable callback was dropped with %d waiting (under %d)", i, maxQueued)
		}
	}
	if d.enqueue("droppable", func() {}, true) {
		t.Errorf("a droppable callback was queued with %d waiting", maxQueued)
	}
	if !d.enqueue("kept", func() {}, false) {
		t.Error("a callback that is not droppable was dropped")
	}
	close(block)
	<-d.closed()
}
